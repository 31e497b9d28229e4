// Issue 37: the JavaScript SDK and the demo page in a real browser (headless Chromium) against a real
// 3-node cluster started with `parley dev`. Run: PARLEY_BIN=.build/debug/parley node --test
// Tests/ParleyJSTests/browser/ (.ci/run does). Bounded: every wait has a deadline, the suite stops the
// cluster and the browser however it ends.
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { Chromium } from './Chromium.mjs';
import { DevCluster } from './DevCluster.mjs';

const parley = process.env.PARLEY_BIN ?? '.build/debug/parley';
const shots = process.env.PARLEY_JS_SCREENSHOTS ?? '.build/js-screenshots';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The page's room events with a room seq, in the order it got them. */
const roomEvents = (page) => page.eval('demo.events.filter((e) => e.seq > 0).map((e) => ({type: e.type, seq: e.seq, body: e.data.body, ntype: e.data.type, targets: (e.data.targets ?? []).map((t) => t.userId)}))');
const bodies = async (page) => (await roomEvents(page)).filter((e) => e.type === 'message').map((e) => e.body);
const edgeOf = (page) => page.eval('demo.client.rooms.get(demo.roomId)?.link?.address ?? null');

/** X2 on what a page got: strictly increasing seqs (no repeat) with no hole, and no gap event. */
async function assertNoHoleNoRepeat(page) {
  const events = await roomEvents(page);
  const seqs = events.map((e) => e.seq);
  for (let i = 1; i < seqs.length; i++) assert.equal(seqs[i], seqs[i - 1] + 1, `${page.name}: seq ${seqs[i]} after ${seqs[i - 1]} (${seqs.join(',')})`);
  assert.equal(await page.eval("demo.events.filter((e) => e.type === 'gap').length"), 0, `${page.name} was told of a gap`);
}

/** Sends from a page until the cluster takes it (the same clientMessageId each time: a resend is deduped). */
async function sendSurely(page, body) {
  return page.eval(`(async () => {
    const id = 'sure-' + ${JSON.stringify(body)};
    for (let i = 0; i < 100; i++) {
      try { return (await demo.send(${JSON.stringify(body)}, id)).seq; }
      catch (e) { if (![408, 415, 5030, 5040, 13100].includes(e.code)) throw e; await new Promise((r) => setTimeout(r, 200)); }
    }
    throw new Error('never sent');
  })()`);
}

describe('the JavaScript SDK in headless Chromium against parley dev (3 nodes)', { timeout: 300000 }, () => {
  let cluster;
  let browser;
  const open = async (query, name) => {
    const page = await browser.open(`${cluster.demoURL}/?${query}&enter=1`, { ready: 'window.demo !== undefined', name });
    await page.waitFor("document.getElementById('state').dataset.state === 'enterOK'", { what: `${name} to enter`, timeoutMs: 30000 });
    return page;
  };

  before(async () => {
    cluster = new DevCluster(parley);
    await cluster.start();
    browser = await Chromium.launch();
  });

  after(async () => {
    await browser?.close();
    await cluster?.stop();
  });

  it('two pages on two nodes chat in order, typed into the demo page; the screenshots show both users', async () => {
    // As the README has a person do it: a name, a node, Enter.
    const byHand = async (account, edge) => {
      const page = await browser.open(`${cluster.demoURL}/`, { ready: 'window.demo !== undefined', name: account });
      await page.eval(`(() => {
        document.getElementById('account').value = ${JSON.stringify(account)};
        document.getElementById('room').value = 'r1';
        document.getElementById('edgePick').value = '${edge}';
        document.getElementById('enterButton').click();
      })()`);
      await page.waitFor("document.getElementById('state').dataset.state === 'enterOK'", { what: `${account} to enter` });
      return page;
    };
    const alice = await byHand('alice', 1);
    const bob = await byHand('bob', 2);
    assert.equal(await edgeOf(alice), cluster.httpAddress(1));
    assert.equal(await edgeOf(bob), cluster.httpAddress(2));
    // Typed and sent with the form, as a person would.
    const type = (page, text) => page.eval(`(() => { document.getElementById('body').value = ${JSON.stringify(text)}; document.getElementById('sendButton').click(); })()`);
    await type(alice, 'hello from alice');
    await bob.waitFor("document.getElementById('messages').innerText.includes('hello from alice')", { what: 'alice\'s message at bob' });
    await type(bob, 'hi alice, bob here');
    await alice.waitFor("document.getElementById('messages').innerText.includes('hi alice, bob here')", { what: 'bob\'s answer at alice' });
    // Both pages, with both users' lines on screen.
    await alice.waitFor("document.getElementById('members').innerText.includes('bob')", { what: 'bob in alice\'s member list' });
    mkdirSync(shots, { recursive: true });
    for (const page of [alice, bob]) {
      const png = await page.screenshot();
      writeFileSync(`${shots}/demo-${page.name}.png`, png);
      assert.equal(png.subarray(1, 4).toString(), 'PNG');
      assert.ok(png.length > 10000, `${page.name}'s screenshot is ${png.length} bytes`);
      // What the screenshot shows is what the page rendered at that moment.
      const text = await page.eval('document.body.innerText');
      for (const line of ['hello from alice', 'hi alice, bob here', 'in the room', 'bob entered', `on ${cluster.httpAddress(page === alice ? 1 : 2)}`]) {
        assert.ok(text.includes(line), `${page.name}'s page lacks "${line}"`);
      }
    }
    const sent = [];
    for (let i = 0; i < 20; i++) { sent.push(`a-${i}`); await alice.eval(`demo.send('a-${i}')`); }
    const want = ['hello from alice', 'hi alice, bob here', ...sent];
    // Both pages: alice's own last messages reach her through her edge's feed, which may be a delivery spacing
    // (20 ms) behind bob's (CI, session 47: alice lacked 'a-19' when only bob's count was waited for).
    for (const page of [bob, alice]) {
      await page.waitFor(`demo.events.filter((e) => e.type === 'message').length >= ${want.length}`, { what: `every message at ${page.name}` });
    }
    assert.deepEqual(await bodies(bob), want);
    assert.deepEqual(await bodies(alice), want);
    await assertNoHoleNoRepeat(bob);
    await assertNoHoleNoRepeat(alice);
    // Bob leaves with the Exit button: alice sees him go and her member list drops him.
    await bob.eval("document.getElementById('exitButton').click()");
    await alice.waitFor("document.getElementById('messages').innerText.includes('bob left') && !document.getElementById('members').innerText.includes('bob')", { what: 'bob leaving at alice' });
    await alice.close();
    await bob.close();
  });

  it('IMClient in the page: a friend request, one-to-one and team messages between two nodes, each once in order; read receipts both ways', async () => {
    const login = async (account, edge) => {
      const page = await browser.open(`${cluster.demoURL}/`, { ready: 'window.demo !== undefined', name: `im-${account}` });
      await page.eval(`(async () => {
        const { IMClient } = await import('/sdk/parley.js');
        const session = await (await fetch('/session', { method: 'POST', body: JSON.stringify({ account: '${account}' }) })).json();
        const { addresses } = await (await fetch('/addresses', { method: 'POST', body: JSON.stringify({ roomId: 'im-probe', account: '${account}', edge: ${edge} }) })).json();
        window.im = new IMClient({ addresses, reconnectDelayMs: 200 });
        window.imEvents = [];
        for (const type of ['item', 'teamItem', 'friendChanged', 'teamMembership', 'teamRead', 'p2pRead']) window.im.addEventListener(type, (e) => window.imEvents.push(e.detail));
        await window.im.login(session.appKey, '${account}', session.token);
      })()`);
      return page;
    };
    const ivy = await login('ivy', 1);
    const jon = await login('jon', 2);
    await ivy.eval("im.requestFriend('jon', 'request', 'hi jon')");
    await jon.waitFor("imEvents.some((e) => e.type === 'item' && e.item.kind === 'friendAdd')", { what: 'the friend request at jon' });
    await jon.eval("im.requestFriend('ivy', 'verify')");
    await ivy.waitFor("imEvents.some((e) => e.type === 'friendChanged' && e.friend === 'jon' && e.isFriend)", { what: 'the friendship at ivy' });
    for (let i = 0; i < 10; i++) await ivy.eval(`im.sendMessage({ p2p: 'jon' }, { body: 'p-${i}' })`);
    await ivy.eval("im.createTeam('crew', 'Crew', { beInviteMode: 'noAuth' }).then(() => im.addUsers(['jon'], 'crew'))");
    await jon.waitFor("imEvents.some((e) => e.type === 'teamMembership' && e.teamId === 'crew')", { what: 'jon in the team' });
    for (let i = 0; i < 5; i++) await ivy.eval(`im.sendMessage({ team: 'crew' }, { body: 't-${i}' })`);
    await jon.waitFor("imEvents.filter((e) => e.type === 'teamItem' && e.item.kind === 'message').length >= 5 && imEvents.filter((e) => e.type === 'item' && e.item.kind === 'message').length >= 10", { what: 'every message at jon' });
    await sleep(300);
    const got = await jon.eval("({ p2p: imEvents.filter((e) => e.type === 'item' && e.item.kind === 'message').map((e) => e.item.body), team: imEvents.filter((e) => e.type === 'teamItem' && e.item.kind === 'message').map((e) => e.item.body), seqs: imEvents.filter((e) => e.type === 'item').map((e) => e.item.seq), lastSeq: im.lastSeq })");
    assert.deepEqual(got.p2p, Array.from({ length: 10 }, (_, i) => `p-${i}`));
    assert.deepEqual(got.team, Array.from({ length: 5 }, (_, i) => `t-${i}`));
    assert.deepEqual(got.seqs, Array.from({ length: got.seqs.length }, (_, i) => i + 1), 'jon\'s log items arrive once each, in order');
    assert.equal(got.lastSeq, got.seqs.length);
    // Issue 38: jon reads both conversations; ivy's page hears it and reads the receipts.
    await jon.eval(`(async () => {
      const last = imEvents.filter((e) => e.type === 'teamItem').at(-1).item.seq;
      const lastP2P = imEvents.filter((e) => e.type === 'item' && e.item.kind === 'message').at(-1).item.seq;
      await im.markRead({ team: 'crew' }, last);
      await im.markRead({ p2p: 'ivy' }, lastP2P);
    })()`);
    await ivy.waitFor("imEvents.some((e) => e.type === 'teamRead' && e.reader === 'jon') && imEvents.some((e) => e.type === 'p2pRead' && e.reader === 'jon')", { what: 'jon\'s receipts at ivy' });
    const receipts = await ivy.eval("(async () => { const t = await im.fetchTeam('crew', { afterSeq: 0, limit: 100 }); const seqs = t.items.filter((i) => i.kind === 'message').map((i) => i.seq); return im.teamReceipts('crew', seqs); })()");
    assert.equal(receipts.length, 5);
    assert.ok(receipts.every((r) => r.readers.includes('jon') && r.unreadCount === 0), JSON.stringify(receipts));
    const jonSide = await jon.eval('im.conversations()');
    assert.equal(jonSide.conversations[0].peer, 'ivy');
    assert.equal(jonSide.conversations[0].unread, 0);
    assert.deepEqual(jonSide.teams.map((t) => [t.teamId, t.unread, t.last.body]), [['crew', 0, 't-4']]);
    const ivySide = await ivy.eval('im.conversations()');
    assert.ok(ivySide.conversations[0].peerReadThrough >= 10, JSON.stringify(ivySide));
    await ivy.eval('im.logout()');
    await jon.eval('im.logout()');
    await ivy.close();
    await jon.close();
  });

  it('an anonymous page receives every message but cannot send (13102)', async () => {
    const guest = await open('anonymous=1&room=r1&edge=3', 'guest');
    const carol = await open('account=carol&room=r1&edge=1', 'carol');
    for (let i = 0; i < 5; i++) await carol.eval(`demo.send('for everyone ${i}')`);
    await guest.waitFor("demo.events.filter((e) => e.type === 'message').length >= 5", { what: 'messages at the guest' });
    assert.deepEqual(await bodies(guest), [0, 1, 2, 3, 4].map((i) => `for everyone ${i}`));
    assert.ok((await guest.eval('demo.client.rooms.get(demo.roomId) && true')));
    const code = await guest.eval("demo.send('let me talk').then(() => 0, (e) => e.code)");
    assert.equal(code, 13102);
    await guest.close();
    await carol.close();
  });

  it('a flood over the send budget gets 416 with retryAfterMs, and the SDK\'s back-off lands every message once', async () => {
    const dave = await open('account=dave&room=r2&edge=1', 'dave');
    // Without retries: the budget (10 a second, bursts of 20) refuses the rest with retryAfterMs.
    const refused = await dave.eval(`(async () => {
      demo.client.options.rateLimitRetries = 0;
      const all = await Promise.allSettled(Array.from({length: 40}, (_, i) => demo.send('burst-' + i)));
      return all.filter((r) => r.status === 'rejected').map((r) => [r.reason.code, r.reason.retryAfterMs]);
    })()`);
    assert.ok(refused.length >= 15, `only ${refused.length} of 40 refused`);
    for (const [code, retryAfterMs] of refused) { assert.equal(code, 416); assert.ok(retryAfterMs > 0); }
    await sleep(2500);  // the budget refills
    // With the SDK's back-off: 60 at once all land, no faster than the budget lets them, each once.
    const result = await dave.eval(`(async () => {
      demo.client.options.rateLimitRetries = 50;
      const started = Date.now();
      const receipts = await Promise.all(Array.from({length: 60}, (_, i) => demo.send('flood-' + i)));
      return { ms: Date.now() - started, seqs: receipts.map((r) => r.seq) };
    })()`);
    assert.equal(new Set(result.seqs).size, 60);
    assert.ok(result.ms >= 3000, `60 messages over a 10/s budget (bursts of 20) took only ${result.ms} ms`);
    const history = await dave.eval("demo.client.fetchMessageHistory(demo.roomId, {limit: 100}).then((items) => items.map((i) => i.body))");
    for (let i = 0; i < 60; i++) assert.equal(history.filter((b) => b === `flood-${i}`).length, 1, `flood-${i} stored once`);
    assert.ok(!(await dave.eval('demo.states')).includes('loseConnection'), 'the flood cost the page its connection');
    await dave.close();
  });

  it('a drain moves a page to another edge while messages flow: no leave seen by the room, no hole, no repeat', async () => {
    const erin = await open('account=erin&room=r3&edge=2', 'erin');
    const frank = await open('account=frank&room=r3&edge=3', 'frank');
    assert.equal(await edgeOf(erin), cluster.httpAddress(2));
    const sending = (async () => {
      for (let i = 0; i < 40; i++) { await sendSurely(frank, `d-${i}`); await sleep(75); }
    })();
    await sleep(500);
    cluster.cluster('drain', 2);
    await erin.waitFor(`demo.client.rooms.get(demo.roomId)?.link?.address !== ${JSON.stringify(cluster.httpAddress(2))}`, { what: 'erin to move off node 2', timeoutMs: 30000 });
    await sending;
    await erin.waitFor("demo.events.filter((e) => e.type === 'message').length >= 40", { what: 'every message at erin' });
    assert.deepEqual(await bodies(erin), Array.from({ length: 40 }, (_, i) => `d-${i}`));
    await assertNoHoleNoRepeat(erin);
    assert.ok(!(await erin.eval('demo.states')).includes('loseConnection'), 'the move showed as a lost connection');
    const leaves = (await roomEvents(frank)).filter((e) => e.type === 'notification' && e.targets.includes('erin') && [301, 302].includes(e.ntype));
    assert.deepEqual(leaves, [], 'the room saw erin leave or enter again');
    cluster.cluster('undrain', 2);
    await erin.close();
    await frank.close();
  });

  it('kill -9 of the node a page is on: it reconnects elsewhere and resumes with no hole and no repeat', async () => {
    const gina = await open('account=gina&room=r4&edge=1', 'gina');
    const hank = await open('account=hank&room=r4&edge=3', 'hank');
    assert.equal(await edgeOf(gina), cluster.httpAddress(1));
    const sent = [];
    for (let i = 0; i < 5; i++) { sent.push(`k-${i}`); await sendSurely(hank, `k-${i}`); }
    await gina.waitFor("demo.events.filter((e) => e.type === 'message').length >= 5", { what: 'the first messages at gina' });
    // Her first re-enter attempt waits 4 s: what hank says meanwhile can only reach her by the resume.
    await gina.eval('demo.client.options.reconnectDelayMs = 4000');
    cluster.kill9(1);
    await gina.waitFor("demo.states.includes('loseConnection')", { what: 'gina to notice', timeoutMs: 30000 });
    for (let i = 5; i < 20; i++) { sent.push(`k-${i}`); await sendSurely(hank, `k-${i}`); }
    assert.equal(await gina.eval("demo.events.filter((e) => e.type === 'message').length"), 5, 'messages reached gina while she was away');
    await gina.waitFor("demo.states.includes('loseConnection') && demo.states[demo.states.length - 1] === 'enterOK'", { what: 'gina back in the room', timeoutMs: 60000 });
    assert.notEqual(await edgeOf(gina), cluster.httpAddress(1));
    for (let i = 20; i < 25; i++) { sent.push(`k-${i}`); await sendSurely(hank, `k-${i}`); }
    await gina.waitFor("demo.events.filter((e) => e.type === 'message').length >= 25", { what: 'every message at gina', timeoutMs: 30000 });
    await sleep(300);  // anything repeated would come now
    assert.deepEqual(await bodies(gina), sent);
    await assertNoHoleNoRepeat(gina);
  });
});
