/** One Prometheus alerting rule, as it appears in a rule file. */
export interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  /** How long the condition must hold before the alert fires (a Prometheus duration). */
  readonly for: string;
  readonly labels: { readonly severity: 'info' | 'warning' | 'critical' } & Readonly<Record<string, string>>;
  readonly annotations: {
    readonly summary: string;
    readonly description: string;
    /** What to do, in one line. */
    readonly runbook: string;
  };
}

export interface RuleGroup {
  readonly name: string;
  readonly rules: readonly AlertRule[];
}

/** A Prometheus rule file (`rule_files:` in prometheus.yml). */
export interface RuleFile {
  readonly groups: readonly RuleGroup[];
}
