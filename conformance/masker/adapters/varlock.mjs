// Adapter: varlock (npm `varlock`). The text path is its runtime's redaction: the resolved
// config marks each item sensitive and redactSensitiveConfig filters what is logged. The command
// path is `varlock run -- child` in a directory whose .env.schema declares each secret
// sensitive, with the values coming from the environment, as varlock's docs allow.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { collect, load, root, serve, versionOf } from '../kit.mjs';

const { resetRedactionMap, redactSensitiveConfig } = load('varlock/env');

function text(secrets, input) {
  const config = {};
  for (const [name, value] of Object.entries(secrets)) config[name] = { isSensitive: true, value };
  resetRedactionMap({ config });
  return redactSensitiveConfig(input);
}

async function command(secrets, argv) {
  const cwd = mkdtempSync(join(tmpdir(), 'secref-varlock-'));
  const names = Object.keys(secrets).map((name) => `${name}=\n`).join('');
  writeFileSync(join(cwd, '.env.schema'), `# @defaultSensitive=true\n# @defaultRequired=false\n# ---\n${names}`);
  const cli = join(root, 'varlock', 'bin', 'cli.js');
  try {
    return await collect([process.execPath, cli, 'run', '--', ...argv], { cwd, env: { ...process.env, ...secrets } });
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

serve({ name: 'varlock', version: versionOf('varlock'), shape: 'wrapper', text, command });
