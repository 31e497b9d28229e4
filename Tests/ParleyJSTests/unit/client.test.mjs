// ChatroomClient's connection rules offline, against ProtocolTestPeer (E8 reconnect, X2 resume and dedupe,
// C5 hand-off, heartbeats, A1 back-off, events as EventTarget events and async iterators).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChatroomClient, ChatroomError } from '../../../Sources/ParleyJS/parley.js';
import { ProtocolTestNetwork } from './ProtocolTestPeer.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const auth = { mode: 'independent', appKey: 'demo', account: 'u', token: 't' };

async function until(condition, what, ms = 10000) {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) { if (condition()) return; await sleep(5); }
  throw new Error(`timed out waiting for ${what}`);
}

function setUp(addresses = ['a:1', 'b:1'], options = {}) {
  const network = new ProtocolTestNetwork();
  const edges = addresses.map((a) => network.edge(a));
  const client = new ChatroomClient({ addressLookup: () => addresses, WebSocketImpl: network.WebSocket, reconnectDelayMs: 10,
                                      requestTimeoutMs: 1000, ...options });
  const seen = [];
  for (const type of ['message', 'gap', 'connectionState', 'autoLoginFailed']) {
    client.addEventListener(type, (e) => seen.push(e.detail));
  }
  const bodies = () => seen.filter((e) => e.type === 'message').map((e) => e.data.body);
  const states = () => seen.filter((e) => e.type === 'connectionState').map((e) => e.data.state);
  return { network, edges, client, seen, bodies, states };
}

test('E8, X2: a dropped connection re-enters with lastSeq, and the replay\'s repeats are dropped', async () => {
  const { network, edges, client, bodies, states } = setUp();
  edges[0].replayOverlap = 3;
  edges[1].replayOverlap = 3;
  await client.enterChatroom({ roomId: 'r1', auth });
  for (const b of ['m1', 'm2', 'm3']) network.publish('message', { body: b });
  await until(() => bodies().length === 3, 'three messages');
  edges[0].dropAll();
  edges[0].up = false;
  network.publish('message', { body: 'm4' });  // while the client is away
  await until(() => states().at(-1) === 'enterOK' && bodies().length === 4, 're-entered with m4');
  assert.equal(edges[1].enters.at(-1).lastSeq, 3);
  network.publish('message', { body: 'm5' });
  await until(() => bodies().length === 5, 'm5');
  assert.deepEqual(bodies(), ['m1', 'm2', 'm3', 'm4', 'm5']);
  assert.deepEqual(states(), ['entering', 'enterOK', 'loseConnection', 'entering', 'enterOK']);
  client.close();
});

test('X2: a re-enter answered gapTooOld reports the range it cannot replay as a gap event', async () => {
  const { network, edges, client, seen } = setUp(['a:1']);
  await client.enterChatroom({ roomId: 'r1', auth });
  network.publish('message', { body: 'm1' });
  await until(() => seen.some((e) => e.type === 'message'), 'm1');
  edges[0].maxReplay = 2;
  edges[0].up = false;
  edges[0].dropAll();
  for (let i = 2; i <= 6; i++) network.publish('message', { body: `m${i}` });
  edges[0].up = true;
  await until(() => seen.filter((e) => e.type === 'message').length === 3, 'the newest two replayed');
  assert.deepEqual(seen.find((e) => e.type === 'gap').data, { fromSeq: 2, toSeq: 4 });
  assert.equal(client.ledger('r1').resumePoint, 6);
  client.close();
});

test('E8: a refusal another attempt cannot change (4010) ends re-entering with autoLoginFailed', async () => {
  const { edges, client, seen } = setUp(['a:1']);
  await client.enterChatroom({ roomId: 'r1', auth, retryCount: 5 });
  edges[0].refuseEnter = 4010;
  edges[0].dropAll();
  await until(() => seen.some((e) => e.type === 'autoLoginFailed'), 'autoLoginFailed');
  assert.equal(seen.find((e) => e.type === 'autoLoginFailed').data.error.code, 4010);
  assert.equal(edges[0].enters.length, 2, 'only one re-enter attempt');
  assert.deepEqual(client.enteredRoomIds, []);
  await assert.rejects(client.sendMessage('r1', { body: 'x' }), (e) => e.code === ChatroomError.notEntered);
});

test('C5: a reconnect event moves the room with replacing and lastSeq, with no state change and no repeat', async () => {
  const { network, edges, client, bodies, states } = setUp();
  edges[1].replayOverlap = 2;
  await client.enterChatroom({ roomId: 'r1', auth });
  network.publish('message', { body: 'm1' });
  network.publish('message', { body: 'm2' });
  await until(() => bodies().length === 2, 'two messages');
  const old = [...edges[0].connections][0];
  old.socket.deliver({ event: 'reconnect', roomId: 'r1', seq: 0, data: { addresses: ['b:1'], sessionId: 'a:1#0' } });
  await until(() => edges[1].enters.length === 1 && edges[0].connections.size === 0, 'the move');
  assert.equal(edges[1].enters[0].replacing, 'a:1#0');
  assert.equal(edges[1].enters[0].lastSeq, 2);
  network.publish('message', { body: 'm3' });
  await until(() => bodies().length === 3, 'm3 through the new edge');
  assert.deepEqual(bodies(), ['m1', 'm2', 'm3']);
  assert.deepEqual(states(), ['entering', 'enterOK']);
  client.close();
});

test('heartbeats: a ping refused 416 keeps the link; a ping never answered drops it and the room re-enters', async () => {
  const { edges, client, states } = setUp(['a:1', 'b:1']);
  for (const e of edges) e.heartbeatMs = 40;
  edges[0].pingAnswer = 416;
  await client.enterChatroom({ roomId: 'r1', auth });
  await sleep(250);
  assert.deepEqual(states(), ['entering', 'enterOK'], 'a refused ping is not a dead link');
  edges[0].pingAnswer = 'silent';
  await until(() => states().includes('loseConnection') && states().at(-1) === 'enterOK', 're-entered after silence');
  assert.equal(edges[0].enters.length + edges[1].enters.length, 2);
  client.close();
});

test('A1: messages over budget wait in line after retryAfterMs and land once each', async () => {
  const { network, edges, client } = setUp(['a:1']);
  await client.enterChatroom({ roomId: 'r1', auth });
  // The first four are taken, then every other try is refused with retryAfterMs.
  let tries = 0;
  const edge = edges[0];
  const connection = [...edge.connections][0];
  const original = connection.receive;
  connection.receive = (frame) => {
    if (frame.op === 'sendMessage' && ++tries > 4 && tries % 2 === 1) {
      connection.socket.deliver({ id: frame.id, ok: false, error: { code: 416, message: 'over budget', retryAfterMs: 20 } });
      return;
    }
    original(frame);
  };
  const receipts = await Promise.all(Array.from({ length: 10 }, (_, i) => client.sendMessage('r1', { body: `f${i}` })));
  assert.equal(new Set(receipts.map((r) => r.seq)).size, 10);
  assert.equal(network.log.length, 10);
  const stored = network.log.map((e) => e.data.body);
  for (let i = 0; i < 10; i++) assert.equal(stored.filter((b) => b === `f${i}`).length, 1);
  client.options.rateLimitRetries = 0;
  tries = 6;  // the next try (the 7th, odd) is refused
  await assert.rejects(client.sendMessage('r1', { body: 'no retry' }), (e) => e.code === 416 && e.retryAfterMs === 20);
  client.close();
});

test('events: async iterators get every event in order and end when the client closes', async () => {
  const { network, client } = setUp(['a:1']);
  const iterator = client.events();
  const got = [];
  const reading = (async () => { for await (const e of iterator) got.push(`${e.type}:${e.data?.body ?? e.data?.state}`); })();
  await client.enterChatroom({ roomId: 'r1', auth });
  network.publish('message', { body: 'x' });
  await until(() => got.length === 3, 'three events');
  client.close();
  await reading;
  assert.deepEqual(got, ['connectionState:entering', 'connectionState:enterOK', 'message:x']);
});

test('issue 16: status lost re-enters by itself from the resume point; E9: kicked forgets the room for good', async () => {
  const { network, edges, client, states, seen } = setUp(['a:1']);
  await client.enterChatroom({ roomId: 'r1', auth });
  network.publish('message', { body: 'm1' });
  await until(() => seen.some((e) => e.type === 'message'), 'm1');
  const deliver = (frame) => { for (const c of edges[0].connections) c.socket.deliver(frame); };
  deliver({ event: 'status', roomId: 'r1', seq: 0, data: { status: 'lost' } });
  await until(() => states().at(-1) === 'enterOK' && edges[0].enters.length === 2, 're-entered after lost');
  assert.equal(edges[0].enters[1].lastSeq, 1);
  assert.deepEqual(states(), ['entering', 'enterOK', 'loseConnection', 'entering', 'enterOK']);
  const kicked = [];
  client.addEventListener('kicked', (e) => kicked.push(e.detail.data.reason));
  deliver({ event: 'kicked', roomId: 'r1', seq: 0, data: { reason: 2, ext: '' } });
  await until(() => kicked.length === 1, 'the kick');
  await sleep(100);
  assert.deepEqual(client.enteredRoomIds, []);
  assert.equal(edges[0].enters.length, 2, 'a kicked room is not re-entered');
  assert.equal(edges[0].connections.size, 0, 'its connection is closed');
  client.close();
});
