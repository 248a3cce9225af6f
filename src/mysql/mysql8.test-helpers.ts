import mysql from 'mysql2';
import { systemClock, type Timer } from '../clock/index.js';

/**
 * A MySQL-8-speaking server for the tests of the MySQL (not MariaDB) path. No real MySQL 8 can run
 * here: Debian ships MariaDB only (`default-mysql-server` is MariaDB), the only npm package that
 * starts a `mysqld` downloads it from MySQL's own site at run time, and this machine reaches the npm
 * registry and Debian only. So the wire protocol is real — mysql2's own published server
 * implementation (`mysql2.createServer`), the handshake, text protocol, result sets and ERR packets
 * a real driver parses — and the server's behaviour is emulated, as MySQL 8.0's manual documents it:
 *
 * - the handshake reports a MySQL 8 version string (`8.0.36`) and a thread id per connection;
 * - `SLEEP(n)` sleeps n seconds; `/*+ MAX_EXECUTION_TIME(ms) *\/` right after a top-level `SELECT`
 *   interrupts it after ms (the hint is ignored on any other statement, as MySQL does);
 * - `KILL QUERY <id>` (from another connection) interrupts that thread's running statement and
 *   answers OK (an unknown id: error 1094); `KILL <id>` closes that connection;
 * - an interrupted statement in which `SLEEP()` is only a part (`... WHERE SLEEP(5)`) fails with
 *   errno 3024 / SQLSTATE HY000 ("maximum statement execution time exceeded") for the hint and 1317
 *   / 70100 ("Query execution was interrupted") for a kill; a statement that is *only* `SELECT
 *   SLEEP(n)` returns 1 and no error, whichever interrupted it (MySQL 8.0 manual, SLEEP());
 * - a client that closes its socket does not stop its statement: it runs to its end on the server;
 * - `SELECT CONNECTION_ID()`, `SELECT VERSION()`, `SELECT <integer>`, transaction control and plain
 *   writes answer as MySQL would; anything else is a syntax error (1064), never a silent success.
 *
 * What the tests read is the server's own record: every statement it received, by thread, and what
 * is running now (its process list).
 */
export interface TestMysql8 {
  readonly host: '127.0.0.1';
  readonly port: number;
  readonly user: 'root';
  readonly database: 'prazo';
  /** Every statement received, in order, with the thread that sent it. */
  readonly received: readonly { readonly thread: number; readonly sql: string }[];
  /** The process list: statements running now. */
  running(): { readonly thread: number; readonly sql: string }[];
  /** The threads of the connections open now. */
  threads(): number[];
  stop(): Promise<void>;
}

export const MYSQL8_VERSION = '8.0.36';

/** What the emulator uses of mysql2's server-side connection (it is typed loosely by mysql2). */
interface ServerConnection {
  serverHandshake(args: object): void;
  on(event: string, listener: (...args: never[]) => void): void;
  writeOk(args?: object): void;
  writeError(args: { code: number; message: string }): void;
  writeColumns(columns: object[]): void;
  writeTextRow(values: unknown[]): void;
  writeEof(): void;
  writePacket(packet: { buffer: Buffer }): void;
  sequenceId: number;
  compressedSequenceId: number;
  readonly stream: { destroy(): void; on(event: 'close', listener: () => void): void };
}

interface Running {
  readonly sql: string;
  interrupt(errno: 3024 | 1317): void;
}

const HINT = /^\s*\(*\s*select\s+\/\*\+\s*max_execution_time\s*\(\s*(\d+)\s*\)\s*\*\//i;
const SELECT = /^\s*\(*\s*select\b/i;
const SLEEP = /\bsleep\s*\(\s*(\d+(?:\.\d+)?)\s*\)/i;
/** `SELECT [hint] SLEEP(n) [AS alias]` and nothing else: SLEEP() is the whole query. */
const LONE_SLEEP =
  /^\s*select\s+(?:\/\*\+[^*]*\*\/\s*)?(sleep\s*\(\s*\d+(?:\.\d+)?\s*\))(?:\s+as\s+`?(\w+)`?)?\s*;?\s*$/i;
const KILL = /^\s*kill\s+(query\s+|connection\s+)?(\d+)\s*;?\s*$/i;
const VALUE =
  /^\s*select\s+(?:\/\*\+[^*]*\*\/\s*)?(connection_id\(\)|version\(\)|-?\d+)(?:\s+as\s+`?(\w+)`?)?\s*;?\s*$/i;
const CONTROL = /^\s*(begin|start\s+transaction|commit|rollback|set|use|savepoint|release)\b/i;
const WRITE = /^\s*(insert|update|delete|replace|do)\b/i;

const MESSAGES = {
  3024: ['HY000', 'Query execution was interrupted, maximum statement execution time exceeded'],
  1317: ['70100', 'Query execution was interrupted'],
  1094: ['HY000', 'Unknown thread id'],
  1064: ['42000', 'You have an error in your SQL syntax'],
} as const;

/** An ERR packet with its real SQLSTATE (mysql2's server writes a placeholder there). */
function writeError(conn: ServerConnection, errno: keyof typeof MESSAGES, detail = ''): void {
  const [sqlState, message] = MESSAGES[errno];
  const write = conn.writePacket;
  conn.writePacket = (packet) => {
    conn.writePacket = write;
    packet.buffer.write(`#${sqlState}`, 7, 'latin1'); // header (4) + 0xff (1) + errno (2)
    write.call(conn, packet);
  };
  conn.writeError({ code: errno, message: detail === '' ? message : `${message}: ${detail}` });
}

const column = (name: string, text: boolean) => ({
  catalog: 'def',
  schema: '',
  table: '',
  orgTable: '',
  name,
  orgName: name,
  characterSet: text ? 33 : 63,
  columnLength: text ? 192 : 21,
  columnType: text ? 253 : 8, // VAR_STRING, LONGLONG
  flags: text ? 0 : 1, // NOT_NULL
  decimals: 0,
});

function writeRow(conn: ServerConnection, name: string, value: string | number): void {
  conn.writeColumns([column(name, typeof value === 'string')]);
  conn.writeTextRow([value]);
  conn.writeEof();
}

/**
 * Writes one whole reply, then starts the next command's sequence at 0: mysql2's server keeps
 * counting across commands instead, and both sides would warn of packets out of order.
 */
function reply(conn: ServerConnection, write: () => void): void {
  write();
  conn.sequenceId = 0;
  conn.compressedSequenceId = 0;
}

export async function startMysql8(): Promise<TestMysql8> {
  const received: { thread: number; sql: string }[] = [];
  const running = new Map<number, Running>();
  const open = new Map<number, ServerConnection>();
  let nextThread = 100;

  const execute = (conn: ServerConnection, thread: number, sql: string): void => {
    received.push({ thread, sql });
    const kill = KILL.exec(sql);
    if (kill !== null) {
      const target = Number(kill[2]);
      if (!open.has(target)) {
        reply(conn, () => writeError(conn, 1094, String(target)));
        return;
      }
      if (kill[1]?.trim().toLowerCase() === 'query') running.get(target)?.interrupt(1317);
      else open.get(target)?.stream.destroy();
      reply(conn, () => conn.writeOk());
      return;
    }
    const sleep = SLEEP.exec(sql);
    if (sleep !== null) {
      const hint = HINT.exec(sql);
      const limitMs = SELECT.test(sql) && hint !== null ? Number(hint[1]) : undefined;
      const lone = LONE_SLEEP.exec(sql);
      const timers: Timer[] = [];
      const end = (interrupted: 3024 | 1317 | undefined): void => {
        if (running.get(thread) !== statement) return;
        running.delete(thread);
        for (const t of timers) systemClock.clearTimer(t);
        reply(conn, () => {
          if (lone !== null) writeRow(conn, lone[2] ?? lone[1]!, interrupted === undefined ? 0 : 1);
          else if (interrupted !== undefined) writeError(conn, interrupted);
          else if (SELECT.test(sql)) {
            conn.writeColumns([column('1', false)]); // WHERE SLEEP(n) is 0, false: no row
            conn.writeEof();
          } else conn.writeOk({ affectedRows: 0 });
        });
      };
      const statement: Running = { sql, interrupt: end };
      running.set(thread, statement);
      timers.push(systemClock.setTimer(() => end(undefined), Number(sleep[1]) * 1_000));
      if (limitMs !== undefined && limitMs > 0) timers.push(systemClock.setTimer(() => end(3024), limitMs));
      return;
    }
    const value = VALUE.exec(sql);
    if (value !== null) {
      const what = value[1]!.toLowerCase();
      const result =
        what === 'connection_id()' ? thread : what === 'version()' ? MYSQL8_VERSION : Number(what);
      reply(conn, () => writeRow(conn, value[2] ?? value[1]!, result));
      return;
    }
    if (CONTROL.test(sql) || WRITE.test(sql)) {
      reply(conn, () => conn.writeOk({ affectedRows: WRITE.test(sql) ? 1 : 0 }));
      return;
    }
    reply(conn, () => writeError(conn, 1064, sql.slice(0, 40)));
  };

  const server = mysql.createServer((raw) => {
    const conn = raw as unknown as ServerConnection;
    const thread = nextThread++;
    open.set(thread, conn);
    conn.stream.on('close', () => open.delete(thread)); // its running statement goes on (see above)
    conn.serverHandshake({
      protocolVersion: 10,
      serverVersion: MYSQL8_VERSION,
      connectionId: thread,
      statusFlags: 2,
      characterSet: 33, // utf8
      capabilityFlags: 0xffffff,
      // any user is let in; the OK that ends the handshake ends its sequence too
      authCallback: (_: unknown, done: (error: null) => void) => reply(conn, () => done(null)),
    });
    conn.on('query', (sql: string) => execute(conn, thread, sql));
    // mysql2's server hands `SET ...` and `PREPARE ...` texts to this event instead of `query`
    conn.on('stmt_prepare', (sql: string) => execute(conn, thread, sql));
    conn.on('init_db', () => reply(conn, () => conn.writeOk()));
    conn.on('ping', () => reply(conn, () => conn.writeOk()));
    conn.on('error', () => undefined);
  });
  const port = await new Promise<number>((resolve, reject) => {
    const net = (server as unknown as { _server: import('node:net').Server })._server;
    net.once('error', reject);
    net.listen(0, '127.0.0.1', () => resolve((net.address() as { port: number }).port));
  });
  return {
    host: '127.0.0.1',
    port,
    user: 'root',
    database: 'prazo',
    received,
    running: () => [...running].map(([thread, r]) => ({ thread, sql: r.sql })),
    threads: () => [...open.keys()],
    stop: async () => {
      for (const r of running.values()) r.interrupt(1317);
      for (const c of open.values()) c.stream.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
