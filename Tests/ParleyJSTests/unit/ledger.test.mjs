// The SDK's pure rules, offline (node --test Tests/ParleyJSTests/unit/): X2's dedupe and resume point, E8's
// reconnect policy, the frames of docs/protocol.md.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ResumeLedger, ReconnectPolicy, ChatroomError, requestFrame, decodeFrame, edgeURL } from '../../../Sources/ParleyJS/parley.js';

test('X2: events at or below lastSeq are repeats and dropped; seq 0 events always pass', () => {
  const ledger = new ResumeLedger();
  assert.equal(ledger.admit(3), true);
  assert.equal(ledger.admit(3), false);
  assert.equal(ledger.admit(2), false);
  assert.equal(ledger.admit(0), true);
  assert.equal(ledger.admit(0), true);
  assert.equal(ledger.admit(4), true);
  assert.equal(ledger.lastSeq, 4);
});

test('X2: a fresh enter\'s room seq is the resume point before any event, but does not drop the enter\'s own 301', () => {
  const ledger = new ResumeLedger();
  assert.equal(ledger.entered({ roomSeq: 41, resumed: false, gapTooOld: false, reentered: false }), null);
  assert.equal(ledger.resumePoint, 41);
  assert.equal(ledger.admit(41), true);  // the 301 of this very enter
  assert.equal(ledger.admit(42), true);
  assert.equal(ledger.resumePoint, 42);
});

test('X2: a resumed answer changes nothing; gapTooOld on a re-enter names the lost range up to replayFromSeq', () => {
  const ledger = new ResumeLedger();
  ledger.entered({ roomSeq: 10, resumed: false, gapTooOld: false, reentered: false });
  ledger.admit(11);
  assert.equal(ledger.entered({ roomSeq: 30, resumed: true, gapTooOld: false, reentered: true }), null);
  assert.equal(ledger.resumePoint, 11);
  assert.deepEqual(ledger.entered({ roomSeq: 300, resumed: false, gapTooOld: true, replayFromSeq: 201, reentered: true }),
                   { fromSeq: 12, toSeq: 200 });
  assert.deepEqual(new ResumeLedger().entered({ roomSeq: 5, resumed: false, gapTooOld: true, reentered: false }), null,
                   'a first enter has nothing to lose');
});

test('X2: a gap moves lastSeq past the range so it is never asked for again', () => {
  const ledger = new ResumeLedger();
  ledger.admit(5);
  ledger.skip(9);
  assert.equal(ledger.resumePoint, 9);
  assert.equal(ledger.admit(8), false);
  ledger.skip(3);
  assert.equal(ledger.lastSeq, 9);
});

test('E8: final refusals end retrying, dead addresses try the next, attempt n waits n × delay', () => {
  for (const code of [13003, 13002, 404, 4010, 4011, 4012, 4015]) assert.ok(ReconnectPolicy.endsRetrying({ code }), `${code}`);
  for (const code of [415, 408, 5030, 5040, 416, 13100]) assert.ok(!ReconnectPolicy.endsRetrying({ code }), `${code}`);
  for (const code of [415, 408, 5030, 5040]) assert.ok(ReconnectPolicy.triesNextAddress({ code }), `${code}`);
  for (const code of [4010, 13003, 416]) assert.ok(!ReconnectPolicy.triesNextAddress({ code }), `${code}`);
  const policy = new ReconnectPolicy({ retryCount: 3, delayMs: 250 });
  assert.deepEqual([1, 2, 3].map((n) => policy.waitBeforeAttempt(n)), [250, 500, 750]);
});

test('requests: fields left undefined or null stay off the wire; ids and ops go first', () => {
  assert.equal(requestFrame(7, 'sendMessage', { roomId: 'r1', body: 'hi', ext: undefined, clientMessageId: null }),
               '{"id":7,"op":"sendMessage","roomId":"r1","body":"hi"}');
  assert.equal(requestFrame(1, 'ping'), '{"id":1,"op":"ping"}');
});

test('frames: answers, refusals with retryAfterMs, events; anything else is refused', () => {
  assert.deepEqual(decodeFrame('{"id":7,"ok":true,"data":{"seq":42}}'), { kind: 'answer', id: 7, ok: true, data: { seq: 42 } });
  const refused = decodeFrame('{"id":8,"ok":false,"error":{"code":416,"message":"over budget","retryAfterMs":120}}');
  assert.equal(refused.error instanceof ChatroomError, true);
  assert.equal(refused.error.code, 416);
  assert.equal(refused.error.retryAfterMs, 120);
  const event = decodeFrame('{"event":"message","roomId":"r1","seq":42,"data":{"body":"hi"}}');
  assert.equal(event.kind, 'event');
  assert.equal(event.seq, 42);
  assert.equal(decodeFrame('{"event":"im","kind":"item","item":{"seq":1}}').frame.item.seq, 1);
  for (const bad of ['[]', '"x"', '{"ok":true}', 'not json']) assert.throws(() => decodeFrame(bad), bad);
  assert.equal(decodeFrame('{"id":9,"ok":false}').error.code, 414);
});

test('addresses: host:port gets ws:// or wss://, URLs keep their scheme', () => {
  assert.equal(edgeURL('127.0.0.1:8101', false), 'ws://127.0.0.1:8101/ws');
  assert.equal(edgeURL('localhost:8101', true), 'wss://localhost:8101/ws');
  assert.equal(edgeURL('wss://edge.example:443', false), 'wss://edge.example:443/ws');
  assert.equal(edgeURL('ws://h:1/ws', true), 'ws://h:1/ws');
});
