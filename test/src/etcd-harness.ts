/**
 * Integration-test harness for a real etcd: the fixture the @fuxi/store tests use
 * (`/usr/bin/etcd` on free loopback ports with a temp data dir, stopped by pid).
 */
export * from '@fuxi/store/etcd-fixture';
