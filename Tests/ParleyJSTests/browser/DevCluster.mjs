// `parley dev` as a user starts it (3 real node processes, the demo page and its app server), on ports of its
// own, with its data in a temporary folder; and what an operator does to it: kill -9 a node, drain one.
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export class DevCluster {
  constructor(parley) {
    this.parley = parley;
    this.data = mkdtempSync(join(tmpdir(), 'parley-js-dev-'));
    const base = 20000 + Math.floor(Math.random() * 400) * 20;
    this.ports = { http: base + 1, peer: base + 5, ops: base + 10, demo: base };
    this.log = '';
  }

  get demoURL() { return `http://127.0.0.1:${this.ports.demo}`; }
  httpAddress(node) { return `127.0.0.1:${this.ports.http + node - 1}`; }

  async start() {
    this.child = spawn(this.parley, [
      'dev', '--nodes', '3', '--shards', '8', '--data', this.data, '--http-port', String(this.ports.http),
      '--peer-port', String(this.ports.peer), '--ops-port', String(this.ports.ops), '--demo-port', String(this.ports.demo),
    ], { stdio: ['ignore', 'pipe', 'pipe'] });
    const keep = (chunk) => { this.log = (this.log + chunk).slice(-20000); };
    this.child.stdout.on('data', keep);
    this.child.stderr.on('data', keep);
    // Ready when the dev app server can hand out a token and a room's edges (the meta group and a shard lead).
    const deadline = Date.now() + 60000;
    while (Date.now() < deadline) {
      try {
        await this.post('/session', { account: 'probe' });
        const { addresses } = await this.post('/addresses', { roomId: 'probe', account: 'probe' });
        if (addresses.length === 3) return;
      } catch {}
      await new Promise((r) => setTimeout(r, 300));
    }
    throw new Error(`parley dev did not become ready: ${this.log.slice(-3000)}`);
  }

  async post(path, body) {
    const response = await fetch(this.demoURL + path, { method: 'POST', body: JSON.stringify(body) });
    const answer = await response.json();
    if (!response.ok) throw new Error(`${path}: ${answer.error}`);
    return answer;
  }

  pid(node) { return Number(readFileSync(join(this.data, `node-${node}.pid`), 'utf8').trim()); }

  kill9(node) { process.kill(this.pid(node), 'SIGKILL'); }

  /** `parley cluster drain|undrain --node N`, as docs/operations.md has the operator run it. */
  cluster(command, node) {
    return execFileSync(this.parley, ['cluster', command, '--node', String(node), '--through', `127.0.0.1:${this.ports.peer}`,
                                      '--secret-file', join(this.data, 'cluster-secret')], { encoding: 'utf8', timeout: 60000 });
  }

  async stop() {
    if (this.child && this.child.exitCode === null) {
      this.child.kill('SIGINT');  // parley dev stops its nodes and exits
      const exited = new Promise((resolve) => this.child.once('exit', resolve));
      const late = setTimeout(() => this.child.kill('SIGKILL'), 20000);
      await exited;
      clearTimeout(late);
    }
    // A node left running (parley dev killed hard) must not outlive the suite.
    for (const node of [1, 2, 3]) { try { process.kill(this.pid(node), 'SIGKILL'); } catch {} }
    rmSync(this.data, { recursive: true, force: true });
  }
}
