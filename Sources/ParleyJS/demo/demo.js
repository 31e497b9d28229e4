// The demo chat page: parley dev's app server (/session, /addresses) plays the part a real app server has,
// and the SDK does the rest. `window.demo` is what the browser tests drive (Tests/ParleyJSTests/browser).
import { ChatroomClient, ChatroomError } from '/sdk/parley.js';

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const demo = {
  client: null, roomId: null, account: null, nickname: null,
  /** Every room event handed to the page, in order: what the tests check for holes and repeats. */
  events: [],
  states: [],
};
window.demo = demo;

async function post(path, body) {
  const response = await fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const answer = await response.json();
  if (!response.ok) throw new Error(answer.error ?? `${path} answered ${response.status}`);
  return answer;
}

function line(kind, seq, from, text) {
  const li = document.createElement('li');
  li.className = kind;
  if (seq) li.dataset.seq = String(seq);
  if (from) {
    const who = document.createElement('span');
    who.className = 'from';
    who.textContent = from;
    li.append(who);
  }
  li.append(document.createTextNode(text));
  $('messages').append(li);
  li.scrollIntoView({ block: 'end' });
}

const members = new Map();
function renderMembers() {
  const list = $('members');
  list.replaceChildren(...[...members.values()].sort().map((name) => {
    const li = document.createElement('li');
    li.textContent = name;
    return li;
  }));
  $('count').textContent = `(${members.size})`;
}

function showState(state) {
  demo.states.push(state);
  const label = { entering: 'entering…', enterOK: 'in the room', enterFailed: 'enter failed', loseConnection: 'connection lost' }[state] ?? state;
  $('state').textContent = label;
  $('state').dataset.state = state;
}

function attach(client) {
  client.addEventListener('message', ({ detail }) => {
    demo.events.push({ type: 'message', seq: detail.seq, data: detail.data });
    line('message', detail.seq, detail.data.fromNickname || detail.data.from, detail.data.body);
  });
  client.addEventListener('notification', ({ detail }) => {
    const n = detail.data;
    demo.events.push({ type: 'notification', seq: detail.seq, data: n });
    const names = n.targets.map((t) => t.nickname || t.userId).join(', ');
    if (n.type === 301) { for (const t of n.targets) members.set(t.userId, t.nickname || t.userId); line('notice', detail.seq, null, `${names} entered`); }
    else if (n.type === 302) { for (const t of n.targets) members.delete(t.userId); line('notice', detail.seq, null, `${names} left`); }
    else line('notice', detail.seq, null, `notification ${n.type} (${names})`);
    renderMembers();
  });
  client.addEventListener('gap', ({ detail }) => {
    demo.events.push({ type: 'gap', seq: detail.seq, data: detail.data });
    line('gap', 0, null, `missed ${detail.data.fromSeq}–${detail.data.toSeq}: reload the history`);
  });
  client.addEventListener('kicked', ({ detail }) => { line('notice', 0, null, `kicked (reason ${detail.data.reason})`); entered(false); });
  client.addEventListener('connectionState', ({ detail }) => {
    showState(detail.data.state);
    // Which edge the page is on now: a stopped node shows as a move to another one.
    const edge = client.rooms.get(detail.roomId)?.link?.address;
    if (detail.data.state === 'enterOK' && edge) $('edge').textContent = `as ${demo.account ?? 'guest'} on ${edge}`;
  });
  client.addEventListener('autoLoginFailed', ({ detail }) => {
    $('error').textContent = `could not get back into the room: ${detail.data.error.message}`;
    entered(false);
  });
}

function entered(yes) {
  for (const id of ['body', 'sendButton', 'exitButton']) $(id).disabled = !yes;
  $('enterButton').disabled = yes;
}

/** Enters as `account` (or anonymously) through the dev app server; `edge` puts that node first. */
demo.enter = async ({ account, roomId, edge, anonymous = false, nickname }) => {
  $('error').textContent = '';
  const name = nickname || account || 'guest';
  // An anonymous visitor asks only to learn the app key and whether the edges speak TLS.
  const session = await post('/session', anonymous ? { account: 'demo-anon-probe' } : { account, nickname: name });
  const auth = anonymous ? { mode: 'anonymous', appKey: session.appKey }
    : { mode: 'independent', appKey: session.appKey, account, token: session.token };
  const lookupAccount = anonymous ? 'demo-anon-probe' : account;
  const client = new ChatroomClient({
    addressLookup: async (room) => (await post('/addresses', { roomId: room, account: lookupAccount, edge: edge ? Number(edge) : undefined })).addresses,
    reconnectDelayMs: 300, requestTimeoutMs: 5000, connectTimeoutMs: 3000, secure: session.secure,
  });
  attach(client);
  demo.client = client;
  demo.roomId = roomId;
  demo.account = account;
  demo.nickname = name;
  const answer = await client.enterChatroom({ roomId, auth, nickname: name, avatar: 'https://example.com/a.png', retryCount: 10 });
  demo.account = answer.account;
  $('edge').textContent = `as ${answer.account} on ${client.rooms.get(roomId)?.link?.address}`;
  members.clear();
  for (const m of await client.fetchChatroomMembers(roomId, { type: 'regularOnline', limit: 100 }).catch(() => [])) members.set(m.userId, m.nickname || m.userId);
  for (const m of await client.fetchChatroomMembers(roomId, { type: 'temp', limit: 100 }).catch(() => [])) members.set(m.userId, m.nickname || m.userId);
  renderMembers();
  entered(true);
  return answer;
};

demo.send = (body, clientMessageId) => demo.client.sendMessage(demo.roomId, { body, clientMessageId });

$('enter').addEventListener('submit', async (e) => {
  e.preventDefault();
  try {
    await demo.enter({ account: $('account').value, roomId: $('room').value, edge: $('edgePick').value, anonymous: $('anonymous').checked });
  } catch (error) {
    $('error').textContent = error instanceof ChatroomError ? `${error.code}: ${error.reason}` : String(error.message ?? error);
  }
});
$('exitButton').addEventListener('click', async () => {
  try { await demo.client.exitChatroom(demo.roomId); } catch {}
  entered(false);
  showState('left');
});
$('send').addEventListener('submit', async (e) => {
  e.preventDefault();
  const body = $('body').value;
  if (!body) return;
  $('body').value = '';
  try {
    await demo.send(body);
  } catch (error) {
    $('error').textContent = error instanceof ChatroomError ? `${error.code}: ${error.reason}` : String(error.message ?? error);
  }
});

// An anonymous visitor has no account to type.
$('anonymous').addEventListener('change', () => { $('account').required = !$('anonymous').checked; });

// ?account=alice&room=lobby&edge=2&enter=1 fills the form (and enters at once with enter=1).
if (params.get('account')) $('account').value = params.get('account');
if (params.get('room')) $('room').value = params.get('room');
if (params.get('edge')) $('edgePick').value = params.get('edge');
if (params.get('anonymous')) { $('anonymous').checked = true; $('account').required = false; }
if (params.get('enter')) $('enterButton').click();
