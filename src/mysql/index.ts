/**
 * `prazo/mysql`: MySQL and MariaDB statements and transactions that stop on the server when the
 * deadline passes (SPEC D4, D7), over `mysql2` (promise and callback APIs) and the `mariadb`
 * connector. Both are optional peers: nothing of them is imported.
 *
 * @module prazo/mysql
 */

export type { MysqlConnection, MysqlPool, MysqlServer, MysqlTarget } from './driver.js';
export { createStoreEvents, type StoreEvents } from './events.js';
export { knexWithDeadline } from './knex.js';
export { MYSQL_DEADLINE_OPTIONS, type MysqlDeadlineOptions } from './options.js';
export {
  MYSQL_POOL_OPTIONS,
  type MysqlPoolOptions,
  type MysqlThrottled,
  mysqlDeadlinePool,
  mysqlOptionsFrom,
  type StoreEntry,
} from './pool.js';
export { mysqlQuery } from './query.js';
export { isStatementInterrupted } from './statement.js';
export { type MysqlTransaction, mysqlTransaction } from './transaction.js';
