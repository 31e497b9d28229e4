// Issue 37: every op and event of docs/protocol.md has an SDK method or event, and every method named exists.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ChatroomClient, IMClient, ROOM_OPS, ROOM_EVENTS, IM_OPS, IM_EVENTS } from '../../../Sources/ParleyJS/parley.js';

const protocol = readFileSync(new URL('../../../docs/protocol.md', import.meta.url), 'utf8');

/** The first column's backticked names of every table row in `section` (up to the next heading of its level). */
function tableNames(heading) {
  const start = protocol.indexOf(heading);
  assert.ok(start >= 0, `docs/protocol.md has no "${heading}"`);
  const level = heading.match(/^#+/)[0];
  const rest = protocol.slice(start + heading.length);
  const end = rest.search(new RegExp(`\\n${level} `));
  const section = end >= 0 ? rest.slice(0, end) : rest;
  const names = [];
  for (const line of section.split('\n')) {
    const m = /^\| ((?:`[A-Za-z0-9]+`(?: \/ )?)+) \|/.exec(line);
    if (m) for (const n of m[1].matchAll(/`([A-Za-z0-9]+)`/g)) names.push(n[1]);
  }
  return names;
}

const has = (prototype, method) => method.startsWith('(') || typeof prototype[method] === 'function';

/** Every op of the tables has a method in `table`, the method exists, and `table` names no op the docs lack. */
function checkOps(ops, table, prototype, client) {
  assert.ok(ops.length >= 25, `read ${ops.length} ops`);
  for (const op of ops) {
    assert.ok(table[op], `op ${op} has no ${client} method`);
    assert.ok(has(prototype, table[op]), `${client}.${table[op]} (op ${op}) does not exist`);
  }
  for (const op of Object.keys(table)) assert.ok(ops.includes(op), `${client}'s table names ${op}, which docs/protocol.md lacks`);
}

test('every room op of docs/protocol.md has a ChatroomClient method', () => {
  checkOps(tableNames('## Ops'), ROOM_OPS, ChatroomClient.prototype, 'ChatroomClient');
});

test('every IM and team op of docs/protocol.md has an IMClient method', () => {
  const ops = [...tableNames('## IM (issue 19, seed 004)'), ...tableNames('## Teams (issue 19, seed 001)')]
    .filter((name) => !['im', 'team'].includes(name));  // the IM events table sits in the IM section
  checkOps(ops, IM_OPS, IMClient.prototype, 'IMClient');
});

test('every event of docs/protocol.md is one the SDK handles', () => {
  const roomEvents = tableNames('## Events');
  assert.ok(roomEvents.length >= 10);
  for (const event of roomEvents) assert.ok(ROOM_EVENTS.includes(event), `room event ${event} is not handled`);
  // The IM events: `im` by kind (written `kind "item"` …) and `team`.
  const kinds = [...protocol.matchAll(/kind `"([A-Za-z]+)"`/g)].map((m) => m[1]);
  const membership = /kind `teamMembership`/.test(protocol) ? ['teamMembership'] : [];
  for (const kind of [...kinds, ...membership, 'team']) assert.ok(IM_EVENTS[kind], `IM event ${kind} is not handled`);
  assert.ok(kinds.length >= 4, `read IM kinds ${kinds}`);
});
