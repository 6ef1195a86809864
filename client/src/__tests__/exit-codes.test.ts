import { expect } from 'chai';
import * as grpc from '@grpc/grpc-js';
import { AlreadyExistsError, FailedPreconditionError, InvalidArgumentError, NotFoundError, UnavailableError } from '@fuxi/common';
import { RpcError } from '@fuxi/rpc';
import { errorLine, EXIT, exitCodeFor } from '../cli/exit-codes.js';

const rpc = (code: ConstructorParameters<typeof RpcError>[0], msg: string, method = 'GetJob') => new RpcError(code, msg, grpc.status.UNKNOWN, {}, method);

describe('cli exit codes', () => {
  it('maps typed errors through their code', () => {
    expect(exitCodeFor(new InvalidArgumentError('name', 'is required'))).to.equal(EXIT.USAGE);
    expect(exitCodeFor(new NotFoundError('job', 'x'))).to.equal(EXIT.NOT_FOUND);
    expect(exitCodeFor(new AlreadyExistsError('job', 'wc', 'with a different spec (tasks[0].instances: 4, not 2)')), 'an id taken by another spec').to.equal(
      EXIT.USAGE,
    );
    expect(exitCodeFor(new UnavailableError('no leader'))).to.equal(EXIT.UNAVAILABLE);
    expect(exitCodeFor(new FailedPreconditionError('finished'))).to.equal(EXIT.OTHER);
  });

  it('maps RpcErrors through their code', () => {
    expect(exitCodeFor(rpc('INVALID_ARGUMENT', 'x'))).to.equal(2);
    expect(exitCodeFor(rpc('NOT_FOUND', 'x'))).to.equal(3);
    expect(exitCodeFor(rpc('UNAVAILABLE', 'x'))).to.equal(4);
    expect(exitCodeFor(rpc('DEADLINE_EXCEEDED', 'x'))).to.equal(4);
    expect(exitCodeFor(rpc('INTERNAL', 'x'))).to.equal(5);
    expect(exitCodeFor(rpc('ALREADY_EXISTS', 'x'))).to.equal(2);
  });

  it('maps commander errors to usage, help to ok', () => {
    expect(exitCodeFor({ code: 'commander.unknownOption', exitCode: 1, message: 'x' })).to.equal(2);
    expect(exitCodeFor({ code: 'commander.help', exitCode: 1, message: 'x' })).to.equal(2);
    expect(exitCodeFor({ code: 'commander.helpDisplayed', exitCode: 0, message: 'x' })).to.equal(0);
    expect(exitCodeFor({ code: 'commander.version', exitCode: 0, message: 'x' })).to.equal(0);
  });

  it('maps anything else to 5', () => {
    expect(exitCodeFor(new Error('boom'))).to.equal(5);
    expect(exitCodeFor('boom')).to.equal(5);
    expect(exitCodeFor(Object.assign(new Error('x'), { code: 'ENOENT' }))).to.equal(5);
  });

  it('formats one error line', () => {
    expect(errorLine(new InvalidArgumentError('tasks[0].command', 'is required'))).to.equal('error: tasks[0].command: is required');
    expect(errorLine(new Error('error: already prefixed'))).to.equal('error: already prefixed');
    expect(errorLine('text')).to.equal('error: text');
  });

  it('says which masters were tried when none answered', () => {
    const e = rpc('UNAVAILABLE', 'No connection established. Last error: connect ECONNREFUSED. Resolution note: ');
    expect(errorLine(e, ['a:1', 'b:2'])).to.equal('error: master unavailable (a:1, b:2): No connection established. Last error: connect ECONNREFUSED');
    expect(errorLine(rpc('UNAVAILABLE', 'agent down', 'ReadLog'), ['a:1'])).to.equal('error: agent down');
  });
});
