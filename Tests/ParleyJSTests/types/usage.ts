// Issue 37: the SDK's TypeScript declarations, checked by `tsc --strict` (Debian's node-typescript) as an app
// would use them; the @ts-expect-error lines are misuses the declarations must refuse.
import { ChatroomClient, ChatroomError, IMClient, type RoomEvent, type SendReceipt } from '../../../Sources/ParleyJS/parley.js';

async function app(): Promise<void> {
  const client = new ChatroomClient({ addressLookup: async (roomId: string) => [`edge-for-${roomId}:8101`], rateLimitRetries: 5 });
  client.addEventListener('message', (event) => {
    const text: string = event.detail.data.body;
    const seq: number = event.detail.seq;
    console.log(text, seq);
  });
  client.addEventListener('connectionState', (event) => console.log(event.detail.data.state === 'loseConnection'));
  const entered = await client.enterChatroom({ roomId: 'lobby', auth: { mode: 'independent', appKey: 'k', account: 'a', token: 't' } });
  const seq: number = entered.room.seq;
  const receipt: SendReceipt = await client.sendMessage('lobby', { body: 'hi' });
  for (const item of await client.fetchMessageHistory('lobby', { limit: 20, order: 'asc' })) {
    if (item.kind === 'message') console.log(item.body); else console.log(item.type);
  }
  for await (const event of client.events()) {
    const e: RoomEvent = event;
    if (e.type === 'gap') console.log(e.data.fromSeq, e.data.toSeq);
    if (e.type === 'shed') for (const [from, to] of e.data.ranges) console.log(e.data.reason, from, to);
    if (e.type === 'message' && e.data.priority === 'low') console.log('may be shed');
  }
  await client.sendMessage('lobby', { body: 'goal!', priority: 'high' });
  try {
    await client.sendMessage('lobby', { body: 'x' });
  } catch (error) {
    if (error instanceof ChatroomError && error.code === ChatroomError.rateLimited) console.log(error.retryAfterMs);
  }
  const im = new IMClient({ addresses: ['127.0.0.1:8101'] });
  im.addEventListener('teamItem', (event) => console.log(event.detail.teamId, event.detail.item.seq, event.detail.alert));
  await im.login('k', 'a', 't');
  const p2p: number = await im.sendMessage({ p2p: 'bob' }, { body: 'hello' });
  await im.createTeam('crew', 'Crew', { beInviteMode: 'noAuth' });
  await im.updateNotifyStateInTeam('crew', 'onlyManager');
  console.log(seq, receipt.serverId, p2p);

  // @ts-expect-error: an anonymous auth has no token, an independent one needs it
  await client.enterChatroom({ roomId: 'r', auth: { mode: 'independent', appKey: 'k', account: 'a' } });
  // @ts-expect-error: sendMessage needs a body
  await client.sendMessage('lobby', { type: 'text' });
  // @ts-expect-error: a priority is high, normal or low
  await client.sendMessage('lobby', { body: 'x', priority: 'urgent' });
  // @ts-expect-error: no such event
  client.addEventListener('messages', () => {});
  // @ts-expect-error: a team's notify state is one of three
  await im.updateNotifyStateInTeam('crew', 'sometimes');
  // @ts-expect-error: a message goes to a user or a team
  await im.sendMessage({ room: 'x' }, { body: 'hello' });
}
void app;
