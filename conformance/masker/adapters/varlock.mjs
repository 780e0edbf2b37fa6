// Adapter: varlock's redaction (npm `varlock`), as its runtime uses it: the resolved config
// graph marks each item sensitive, and redactSensitiveConfig filters what is logged.
import { load, serve, versionOf } from '../kit.mjs';

const { resetRedactionMap, redactSensitiveConfig } = load('varlock/env');

function text(secrets, input) {
  const config = {};
  for (const [name, value] of Object.entries(secrets)) config[name] = { isSensitive: true, value };
  resetRedactionMap({ config });
  return redactSensitiveConfig(input);
}

serve({ name: 'varlock', version: versionOf('varlock'), shape: 'library', text });
