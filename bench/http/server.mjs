import http from 'node:http';
import { report } from '../lib/child.mjs';

/**
 * The loopback keep-alive server every HTTP variant calls, in its own process so it never shares an
 * event loop with the client being measured. It answers `GET /` with a 2-byte body at once: the client's
 * cost is what varies between variants, the server's is the same for all of them.
 * Listens on 127.0.0.1 only, on a port the OS picks; reports `{ port }` and runs until SIGTERM.
 */
const BODY = Buffer.from('ok');

const server = http.createServer((req, res) => {
  req.resume();
  res.writeHead(200, { 'content-type': 'text/plain', 'content-length': String(BODY.length) });
  res.end(BODY);
});
server.keepAliveTimeout = 60_000;
server.headersTimeout = 65_000;
server.requestTimeout = 0;

server.listen(0, '127.0.0.1', () => {
  report({ port: server.address().port, pid: process.pid });
});

const stop = () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
