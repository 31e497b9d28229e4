// Issue 37: parley.d.ts checked by `tsc --strict` against an app's use of it, misuses refused
// (Tests/ParleyJSTests/types/usage.ts). Debian's node-typescript provides tsc (cluster/test-tools.sh installs it).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const usage = fileURLToPath(new URL('../types/usage.ts', import.meta.url));
const tsc = spawnSync('tsc', ['--version'], { encoding: 'utf8' });

test('the TypeScript declarations type-check an app and refuse its misuses', { skip: tsc.status !== 0 && 'tsc is not installed (apt-get install -y node-typescript)' }, () => {
  const run = spawnSync('tsc', ['--noEmit', '--strict', '--target', 'es2022', '--module', 'es2022', '--moduleResolution', 'node',
                                '--lib', 'es2022,dom', usage], { encoding: 'utf8', timeout: 120000 });
  assert.equal(run.status, 0, run.stdout + run.stderr);
});
