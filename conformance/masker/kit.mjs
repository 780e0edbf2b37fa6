// The adapter side of the masker protocol for adapters written for Node.js: the same loop as
// kit.py. It says hello, then answers one request per line. It never writes anything but
// protocol lines to standard output, and reports a failing masker by its error's name alone.
import { createInterface } from 'node:readline';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { spawn } from 'node:child_process';

// Packages are installed by `tox -e maskers` into a directory of their own, named here.
export const root = process.env.SECREF_NODE_MODULES || join(process.cwd(), 'node_modules');
export const load = createRequire(join(dirname(root), 'adapter.cjs'));

export function versionOf(pkg) {
  return JSON.parse(readFileSync(join(root, pkg, 'package.json'), 'utf8')).version;
}

// Run argv (a wrapper with its child) and collect its standard output, then its standard
// error: what a model reading the wrapper's output would see.
export function collect(argv, options = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0], argv.slice(1), { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    const out = [];
    const err = [];
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stdout.on('data', (chunk) => out.push(chunk));
    child.stderr.on('data', (chunk) => err.push(chunk));
    child.on('error', reject);
    child.on('close', () => resolve(out.join('') + err.join('')));
  });
}

export function serve({ name, version, shape, text, command, pieces }) {
  const paths = {};
  if (text) paths.text = [text, 'text'];
  if (command) paths.command = [command, 'argv'];
  if (pieces) paths['stream-pieces'] = [pieces, 'pieces'];
  const hello = { protocol: 'secref-masker/1', masker: { name, version, shape },
    capabilities: Object.keys(paths) };
  process.stdout.write(JSON.stringify(hello) + '\n');
  let queue = Promise.resolve();
  createInterface({ input: process.stdin }).on('line', (line) => {
    queue = queue.then(async () => {
      const request = JSON.parse(line);
      const secrets = Object.fromEntries(request.secrets.map((s) => [s.name, s.value]));
      const answer = { id: request.id };
      try {
        const [fn, key] = paths[request.op];
        answer.output = await fn(secrets, request[key]);
      } catch (error) {
        answer.error = `the masker raised ${error && error.name ? error.name : 'an error'}`;
      }
      process.stdout.write(JSON.stringify(answer) + '\n');
    });
  });
}
