import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';

/**
 * What the numbers were measured on. A ratio needs no machine to be read; an absolute figure does, and
 * the load average says how busy the (shared) machine was when the run started.
 */
export function describeMachine() {
  const cpus = os.cpus();
  return {
    cpuModel: cpuModel(cpus),
    cores: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    node: process.version,
    v8: process.versions.v8,
    undici: packageVersion('undici'),
    cockatiel: packageVersion('cockatiel'),
    loadAverage1m: Math.round(os.loadavg()[0] * 100) / 100,
  };
}

function cpuModel(cpus) {
  const fromNode = cpus[0]?.model?.trim();
  if (fromNode && fromNode !== 'unknown') return fromNode;
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('model name'));
    return line ? line.split(':')[1].trim() : 'unknown';
  } catch {
    return 'unknown';
  }
}

function packageVersion(name) {
  try {
    const require = createRequire(import.meta.url);
    return require(`${name}/package.json`).version;
  } catch {
    return null;
  }
}

/** One line for the markdown header. */
export function machineLine(m) {
  return `${m.cpuModel}, ${m.cores} cores, ${m.memoryGiB} GiB, ${m.platform}, Node ${m.node} (V8 ${m.v8}), undici ${m.undici}, load avg ${m.loadAverage1m} at start`;
}
