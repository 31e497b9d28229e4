// Debian's chromium, headless, driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`: JSON
// messages ended by NUL on file descriptors 3 and 4), so any Node from 18 on will do and no npm package is
// needed. One browser, many pages; each page runs real JavaScript against the real cluster.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const chromiumPath = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find(existsSync);

export class Chromium {
  static async launch() {
    if (!chromiumPath) throw new Error('chromium is not installed (apt-get install -y chromium)');
    const profile = mkdtempSync(join(tmpdir(), 'parley-js-chromium-'));
    const child = spawn(chromiumPath, [
      '--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run',
      `--user-data-dir=${profile}`, '--remote-debugging-pipe', '--window-size=1000,800',
      // Pages in the background keep their timers (heartbeats, reconnect delays) at full speed.
      '--disable-background-timer-throttling', '--disable-renderer-backgrounding',
      '--disable-backgrounding-occluded-windows', 'about:blank',
    ], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'], detached: true });  // its own process group: close kills its helpers too
    let errors = '';
    child.stderr.on('data', (chunk) => { errors = (errors + chunk).slice(-2000); });
    const browser = new Chromium(child, profile);
    browser.#connect(child.stdio[3], child.stdio[4]);
    // The browser answers once it is up.
    await Promise.race([
      browser.send('Browser.getVersion'),
      new Promise((_, reject) => setTimeout(() => reject(new Error(`chromium did not start: ${errors}`)), 20000)),
      new Promise((_, reject) => child.once('exit', (code) => reject(new Error(`chromium exited ${code}: ${errors}`)))),
    ]);
    return browser;
  }

  constructor(child, profile) {
    this.child = child;
    this.profile = profile;
    this.lastId = 0;
    this.waiting = new Map();
    this.listeners = new Map();
  }

  #connect(input, output) {
    this.input = input;
    let pending = '';
    output.setEncoding('utf8');
    output.on('data', (chunk) => {
      pending += chunk;
      let end;
      while ((end = pending.indexOf('\0')) >= 0) {
        const m = JSON.parse(pending.slice(0, end));
        pending = pending.slice(end + 1);
        if (m.id !== undefined) {
          const w = this.waiting.get(m.id);
          if (!w) continue;
          this.waiting.delete(m.id);
          if (m.error) w.reject(new Error(`${w.method}: ${m.error.message}`)); else w.resolve(m.result);
        } else {
          for (const listener of this.listeners.get(m.sessionId) ?? []) listener(m.method, m.params);
        }
      }
    });
  }

  send(method, params = {}, sessionId) {
    const id = ++this.lastId;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject, method });
      this.input.write(JSON.stringify({ id, method, params, sessionId }) + '\0');
    });
  }

  /** A new tab at `url`, ready once `ready` (an expression) is true in it. */
  async open(url, { ready = 'true', name = url } = {}) {
    const { targetId } = await this.send('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await this.send('Target.attachToTarget', { targetId, flatten: true });
    const page = new Page(this, sessionId, targetId, name);
    this.listeners.set(sessionId, [(method, params) => page.onEvent(method, params)]);
    await this.send('Runtime.enable', {}, sessionId);
    await this.send('Page.enable', {}, sessionId);
    await this.send('Page.navigate', { url }, sessionId);
    await page.waitFor(ready, { timeoutMs: 20000, what: `${name} to load` });
    return page;
  }

  async close() {
    try { this.input?.end(); } catch {}
    const exited = new Promise((resolve) => (this.child.exitCode !== null ? resolve() : this.child.once('exit', resolve)));
    try { process.kill(-this.child.pid, 'SIGKILL'); } catch { this.child.kill('SIGKILL'); }
    await exited;
    // A helper process may still be writing its last file for a moment.
    for (let attempt = 0; attempt < 20; attempt++) {
      try { rmSync(this.profile, { recursive: true, force: true }); return; } catch { await new Promise((r) => setTimeout(r, 100)); }
    }
  }
}

export class Page {
  constructor(browser, sessionId, targetId, name) {
    this.browser = browser;
    this.sessionId = sessionId;
    this.targetId = targetId;
    this.name = name;
    this.console = [];
  }

  onEvent(method, params) {
    if (method === 'Runtime.consoleAPICalled') {
      this.console.push(`${params.type}: ${params.args.map((a) => a.value ?? a.description).join(' ')}`);
    } else if (method === 'Runtime.exceptionThrown') {
      this.console.push(`exception: ${params.exceptionDetails.exception?.description ?? params.exceptionDetails.text}`);
    }
  }

  /** Runs `expression` (awaited if it is a promise) in the page and returns its JSON value. */
  async eval(expression) {
    const answer = await this.browser.send('Runtime.evaluate', {
      expression, awaitPromise: true, returnByValue: true,
    }, this.sessionId);
    if (answer.exceptionDetails) {
      const d = answer.exceptionDetails;
      throw new Error(`${this.name}: ${d.exception?.description ?? d.text}`);
    }
    return answer.result.value;
  }

  /** Polls `expression` until it is truthy; returns its value. */
  async waitFor(expression, { timeoutMs = 30000, what = expression } = {}) {
    const deadline = Date.now() + timeoutMs;
    let last;
    while (Date.now() < deadline) {
      try {
        last = await this.eval(expression);
        if (last) return last;
      } catch (error) {
        last = error.message;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${this.name}: timed out waiting for ${what} (last: ${JSON.stringify(last)}); console: ${this.console.slice(-10).join(' | ')}`);
  }

  async screenshot() {
    const { data } = await this.browser.send('Page.captureScreenshot', { format: 'png' }, this.sessionId);
    return Buffer.from(data, 'base64');
  }

  async close() { await this.browser.send('Target.closeTarget', { targetId: this.targetId }); }
}
