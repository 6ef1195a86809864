import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { InvalidArgumentError, nullLogger, PermissionDeniedError, UnauthenticatedError } from '@fuxi/common';
import { loadFuxiProto } from '@fuxi/proto';
import {
  ANONYMOUS,
  bearerToken,
  callerOf,
  certIdentity,
  parseTokens,
  readTokenFile,
  TokenFile,
  tokenHash,
  tokenMatches,
  tokenMetadata,
  type Authn,
} from '../auth.js';
import { connect } from '../client.js';
import { RpcError, toGrpcError } from '../errors.js';
import { implement, startServer } from '../server.js';

const ALICE = 'alice-token-0123456789';
const ADMIN = 'admin-token-0123456789';
const TOKENS = `# token,name,role[,group...]
${ALICE},alice,user,gold,silver

${ADMIN},root,admin
`;

function call(md: grpc.Metadata, raw?: Buffer) {
  return { metadata: md, getAuthContext: () => (raw ? { sslPeerCertificate: { raw } } : {}) };
}

describe('auth: tokens file', () => {
  it('parses token,name,role[,group...] lines, skipping comments and blank lines', () => {
    const t = parseTokens(TOKENS);
    expect(t.size).to.equal(2);
    expect(t.get(ALICE)).to.deep.equal({ name: 'alice', role: 'user', groups: ['gold', 'silver'] });
    expect(t.get(ADMIN)).to.deep.equal({ name: 'root', role: 'admin', groups: [] });
  });

  it('refuses an unknown role, a short token or a token listed twice, naming the line and never the token', () => {
    const bad = (text: string, reason: RegExp) => {
      try {
        parseTokens(text);
        expect.fail('accepted');
      } catch (e) {
        expect(e).to.be.instanceOf(InvalidArgumentError);
        expect((e as InvalidArgumentError).message).to.match(reason);
        expect((e as Error).message).not.to.contain('0123456789');
      }
    };
    bad(`${ALICE},alice,superuser`, /tokens line 1: role "superuser"/);
    bad('short,alice,user', /at least 16/);
    bad(`${ALICE},a,user\n${ALICE},b,user`, /tokens line 2: .*twice/);
    bad(`${ALICE},,user`, /name is empty/);
    bad(`${ALICE},x,am`, /role "am"/);
  });

  it('TokenFile reloads on reload() and keeps the last good table when the file turns bad', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-tokens-'));
    const file = path.join(dir, 'tokens.csv');
    fs.writeFileSync(file, `${ALICE},alice,user\n`);
    const tf = new TokenFile(file, nullLogger, 60_000);
    try {
      expect(tf.table.get(ALICE)?.name).to.equal('alice');
      fs.writeFileSync(file, `${ADMIN},root,admin\n`);
      tf.reload();
      expect(tf.table.has(ALICE)).to.equal(false);
      expect(tf.table.get(ADMIN)?.role).to.equal('admin');
      fs.writeFileSync(file, `${ADMIN},root,nobody\n`);
      tf.reload();
      expect(tf.table.get(ADMIN)?.role).to.equal('admin');
    } finally {
      tf.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('readTokenFile takes the first non-empty line; a missing file names the key', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-token-'));
    try {
      fs.writeFileSync(path.join(dir, 't'), `\n  ${ALICE}  \nignored\n`);
      expect(readTokenFile(path.join(dir, 't'))).to.equal(ALICE);
      expect(() => readTokenFile(path.join(dir, 'none'))).to.throw(InvalidArgumentError, /tokenFile/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('auth: callerOf', () => {
  const authn: Authn = {
    insecure: false,
    tokens: () => parseTokens(TOKENS),
    amToken: (t) => (t === 'am-token-of-app-a-attempt-2' ? { appId: 'a', attempt: 2 } : undefined),
  };

  it('resolves a static token, an AM attempt token, and no credentials as anonymous', () => {
    expect(callerOf(call(tokenMetadata(ALICE)), authn)).to.deep.equal({ name: 'alice', role: 'user', groups: ['gold', 'silver'] });
    expect(callerOf(call(tokenMetadata(ADMIN)), authn)).to.deep.equal({ name: 'root', role: 'admin' });
    expect(callerOf(call(tokenMetadata('am-token-of-app-a-attempt-2')), authn)).to.include({ role: 'am', appId: 'a', attempt: 2 });
    expect(callerOf(call(new grpc.Metadata()), authn)).to.equal(ANONYMOUS);
  });

  it('an unknown token is UNAUTHENTICATED naming the method, not the token', () => {
    try {
      callerOf(call(tokenMetadata('no-such-token-0000000')), authn, 'KillJob');
      expect.fail('accepted');
    } catch (e) {
      expect(e).to.be.instanceOf(UnauthenticatedError);
      expect((e as Error).message).to.match(/^KillJob: unauthenticated/);
      expect((e as Error).message).not.to.contain('no-such-token');
    }
  });

  it('reads the bearer token only from "authorization: Bearer <token>"', () => {
    const md = new grpc.Metadata();
    md.set('authorization', 'Basic abc');
    expect(bearerToken(md)).to.equal(undefined);
    md.set('authorization', 'bearer xyz');
    expect(bearerToken(md)).to.equal('xyz');
  });

  it('hashes tokens with sha-256 and compares them in constant time', () => {
    expect(tokenHash('abc')).to.equal('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(tokenMatches('abc', tokenHash('abc'))).to.equal(true);
    expect(tokenMatches('abd', tokenHash('abc'))).to.equal(false);
    expect(tokenMatches('abc', 'not-hex')).to.equal(false);
  });

  it('names the caller from a certificate: CN = name, O = role, OU = quota groups', function () {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fuxi-cert-'));
    try {
      const pem = (subj: string): Buffer => {
        const key = path.join(dir, 'k.pem');
        const crt = path.join(dir, 'c.pem');
        execFileSync(
          'openssl',
          ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', key, '-out', crt, '-days', '1', '-subj', subj],
          {
            stdio: 'ignore',
          },
        );
        return fs.readFileSync(crt);
      };
      let user: Buffer;
      try {
        user = pem('/O=user/OU=gold/CN=bob');
      } catch {
        this.skip();
      }
      expect(certIdentity(user)).to.deep.equal({ name: 'bob', role: 'user', groups: ['gold'] });
      // Seen again (kept by its bytes): the same identity, a copy a caller may change.
      const again = certIdentity(Buffer.from(user))!;
      expect(again).to.deep.equal({ name: 'bob', role: 'user', groups: ['gold'] });
      again.groups!.push('changed');
      expect(certIdentity(user)).to.deep.equal({ name: 'bob', role: 'user', groups: ['gold'] });
      expect(certIdentity(pem('/O=agent/CN=n1'))).to.deep.equal({ name: 'n1', role: 'agent' });
      expect(certIdentity(pem('/O=wizard/CN=x'))).to.equal(undefined);
      expect(certIdentity(Buffer.from('not a certificate'))).to.equal(undefined);
      // A token wins over the certificate; without one the certificate names the caller.
      expect(callerOf(call(new grpc.Metadata(), user), authn)).to.deep.equal({ name: 'bob', role: 'user', groups: ['gold'] });
      expect(callerOf(call(tokenMetadata(ADMIN), user), authn).name).to.equal('root');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('auth: over gRPC', () => {
  it('a client sends its token (or a per-call one); a denial reaches it as PERMISSION_DENIED / UNAUTHENTICATED', async () => {
    const proto = loadFuxiProto();
    const tokens = parseTokens(TOKENS);
    const seen: string[] = [];
    const handlers = implement(
      proto.AgentService.service,
      {
        ListWorkers: (_req, c) => {
          const caller = callerOf(c, { insecure: false, tokens: () => tokens }, 'ListWorkers');
          seen.push(caller.name);
          if (caller.role !== 'admin') throw new PermissionDeniedError('ListWorkers', `${caller.name} is not an admin`);
          return { workers: [] };
        },
        UpdateGrants: () => ({ appliedSeq: '0' }),
        StartWorkers: () => ({ workers: [] }),
        StopWorkers: () => ({ workers: [] }),
        Calls: () => ({ results: [] }),
        GetAgentState: () => ({}),
        ReadLog: () => undefined,
        FetchOutput: () => undefined,
      },
      nullLogger,
    );
    const srv = await startServer({
      bind: '127.0.0.1:0',
      log: nullLogger,
      services: [{ name: 'fuxi.v1.AgentService', definition: proto.AgentService.service, handlers }],
    });
    const admin = connect(proto.AgentService, srv.address, { token: () => ADMIN });
    const anon = connect(proto.AgentService, srv.address);
    try {
      await admin.ListWorkers({ appId: '' });
      const e1 = await admin.ListWorkers({ appId: '' }, { token: ALICE }).catch((e: unknown) => e);
      expect(e1).to.be.instanceOf(RpcError);
      expect((e1 as RpcError).code).to.equal('PERMISSION_DENIED');
      expect((e1 as RpcError).grpcCode).to.equal(grpc.status.PERMISSION_DENIED);
      const e2 = await anon.ListWorkers({ appId: '' }, { token: 'unknown-token-000000000' }).catch((e: unknown) => e);
      expect((e2 as RpcError).code).to.equal('UNAUTHENTICATED');
      expect((e2 as RpcError).message).to.match(/^ListWorkers: unauthenticated/);
      expect(seen).to.deep.equal(['root', 'alice']);
    } finally {
      admin.close();
      anon.close();
      await srv.shutdown(100);
    }
    // The mapping is one place: a typed error goes out with its own code.
    expect(toGrpcError(new UnauthenticatedError('X', 'y')).code).to.equal(grpc.status.UNAUTHENTICATED);
  });
});
