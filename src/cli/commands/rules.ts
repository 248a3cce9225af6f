import { mkdirSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { DEFAULT_CONFIG_FILE } from '../../config/constants.js';
import { checkConfigFile } from '../../config/load.js';
import { formatProblem } from '../../config/problem.js';
import { isInvalidOptions } from '../../errors/guards.js';
import { generateAlertRules, renderAlertRules } from '../../rules/alerts.js';
import { generateDashboard } from '../../rules/dashboard.js';
import { rulesInputFromConfig } from '../../rules/from-config.js';
import { NAMING_SCHEMES, type NamingScheme } from '../../rules/names.js';
import { cliContext, UsageError } from '../context.js';
import { replaceFile } from '../files.js';
import { choiceArg } from '../parse-args.js';

/**
 * `prazo rules`: Prometheus alerting rules and a Grafana dashboard generated from the central config
 * (SPEC R7, V1, V3, B3, C5, X3), so alert thresholds come from the same file as the budgets they watch.
 * Writes `prazo-alerts.yaml` (for `rule_files:`) and `prazo-dashboard.json` (Grafana → Import).
 */

export const OUTPUT_FILES = Object.freeze({ alerts: 'prazo-alerts.yaml', dashboard: 'prazo-dashboard.json' });

interface Flags {
  config: string;
  out: string;
  naming: NamingScheme;
}

export interface RulesReport {
  readonly alertsFile: string;
  readonly dashboardFile: string;
  readonly rules: number;
  readonly panels: number;
  readonly warnings: readonly string[];
}

export function register(program: Command): void {
  program
    .command('rules')
    .description('generate Prometheus alert rules and a Grafana dashboard from prazo.config.yaml')
    .option('--config <file>', 'the central config', DEFAULT_CONFIG_FILE)
    .option('--out <dir>', 'directory to write prazo-alerts.yaml and prazo-dashboard.json to', '.')
    .option(
      '--naming <scheme>',
      'metric names as your Prometheus sees them: exporter (the OpenTelemetry JS Prometheus exporter) or otlp (OTLP ingestion / the Collector, with unit suffixes)',
      choiceArg('--naming', NAMING_SCHEMES),
      'exporter',
    )
    .action((flags: Flags, command: Command) => {
      const context = cliContext(command);
      const report = rulesCommand(flags, context.io.cwd);
      for (const warning of report.warnings) context.io.stderr(`${warning}\n`);
      context.io.stdout(
        `wrote ${report.rules} alert rule(s) to ${report.alertsFile}\n` +
          `wrote a dashboard of ${report.panels} panel(s) to ${report.dashboardFile}\n`,
      );
    });
}

export function rulesCommand(flags: Flags, cwd: string): RulesReport {
  const configPath = resolve(cwd, flags.config);
  const check = checkConfigFile(configPath);
  const lines = check.problems.map(formatProblem);
  if (check.config === undefined) {
    throw new UsageError(`${flags.config} has problems:\n${lines.join('\n')}`);
  }
  const input = rulesInputFromConfig(check.config);
  let alerts: string;
  let dashboard: ReturnType<typeof generateDashboard>;
  try {
    const file = generateAlertRules(input, { naming: flags.naming });
    alerts = renderAlertRules(file, basename(flags.config));
    dashboard = generateDashboard(input, { naming: flags.naming });
    const out = resolve(cwd, flags.out);
    mkdirSync(out, { recursive: true });
    const alertsFile = join(out, OUTPUT_FILES.alerts);
    const dashboardFile = join(out, OUTPUT_FILES.dashboard);
    replaceFile(alertsFile, alerts);
    replaceFile(dashboardFile, `${JSON.stringify(dashboard, null, 2)}\n`);
    return {
      alertsFile,
      dashboardFile,
      rules: file.groups.reduce((n, g) => n + g.rules.length, 0),
      panels: dashboard.panels.filter((p) => p.type !== 'row').length,
      warnings: lines,
    };
  } catch (error) {
    if (isInvalidOptions(error)) throw new UsageError(error.problems.join('; '));
    if ((error as NodeJS.ErrnoException).code !== undefined) {
      throw new UsageError(`cannot write to ${flags.out}: ${(error as Error).message}`);
    }
    throw error;
  }
}
