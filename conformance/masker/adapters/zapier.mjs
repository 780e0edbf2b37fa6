// Adapter: Zapier's secret scrubber (npm `@zapier/secret-scrubber`): scrub(input, secretValues),
// as its README shows.
import { load, serve, versionOf } from '../kit.mjs';

const { scrub } = load('@zapier/secret-scrubber');

function text(secrets, input) {
  return scrub(input, Object.values(secrets));
}

serve({ name: '@zapier/secret-scrubber', version: versionOf('@zapier/secret-scrubber'), shape: 'library', text });
