import { ChatroomError } from './ChatroomError.js';
import { ClientEvents } from './ClientEvents.js';
import { connectFirst, sleep } from './Link.js';
import { PROTOCOL_VERSIONS, newClientMessageId } from './ChatroomClient.js';
import { ReconnectPolicy } from './ReconnectPolicy.js';

/** Every IM and team op of docs/protocol.md and the IMClient method that sends it. */
export const IM_OPS = Object.freeze({
  imLogin: 'login', friend: 'requestFriend', deleteFriend: 'deleteFriend', updateRemark: 'updateRemark',
  setBlocked: 'addToBlackList', setMuted: 'updateNotifyStateForUser', relations: 'relations', sendP2P: 'sendMessage',
  syncIm: '(login and syncNeeded)', teamCreate: 'createTeam', teamInvite: 'addUsers',
  teamAcceptInvitation: 'acceptInvite', teamRejectInvitation: 'rejectInvite', teamLeave: 'quitTeam',
  teamDismiss: 'dismissTeam', teamApply: 'applyToTeam', teamApproveApplication: 'passApply',
  teamRejectApplication: 'rejectApply', teamKick: 'kickUsers', teamUpdate: 'updateTeam',
  teamTransferOwner: 'transferOwner', teamAddManagers: 'addManagers', teamRemoveManagers: 'removeManagers',
  teamMuteMember: 'updateMuteState', teamSetNotifyState: 'updateNotifyStateInTeam', sendTeamMessage: 'sendMessage',
  teamQuery: 'fetchTeam', markRead: 'markRead', teamReceipts: 'teamReceipts', conversations: 'conversations',
});

/** The IM events of docs/protocol.md (`im` by kind, and `team`) and the IMClient event each becomes. */
export const IM_EVENTS = Object.freeze({
  item: 'item', friendChanged: 'friendChanged', blocklistChanged: 'blocklistChanged',
  muteListChanged: 'muteListChanged', syncNeeded: '(syncs)', teamMembership: 'teamMembership', team: 'teamItem',
  p2pRead: 'p2pRead', teamRead: 'teamRead',
});

const TEAM_FIELDS = ['intro', 'announcement', 'avatar', 'joinMode', 'inviteMode', 'beInviteMode', 'updateInfoMode', 'type'];

/**
 * The IM side (the seed's login, user, chat, team and system notification managers) over one WebSocket, as
 * the Swift SDK's `IMClient`. After `login` it keeps the user's log in step: it syncs what the device missed
 * (from `lastSeq`, the highest item it delivered) in order, then delivers live items, each once; it logs in
 * again by itself after a lost connection (next address, growing delays, 20 attempts) and syncs again. Team
 * items arrive per team in order, each once; a hole or a team joined meanwhile is filled from the team's log.
 *
 * Events (`{type, ...}`): `item` {item}, `friendChanged` {friend, isFriend}, `blocklistChanged`,
 * `muteListChanged`, `teamMembership` {teamId, isMember}, `teamItem` {teamId, item, alert}, `historyGone`
 * {fromSeq, toSeq}, `connectionState` {state: 'loggingIn'|'loggedIn'|'lost'|'loginFailed', error?}, and the read
 * receipts (issue 38) `p2pRead` {peer, reader, throughSeq} and `teamRead` {teamId, reader, throughSeq}, and
 * `conversations` {conversations, teams} after every (re)login: the user's conversations with unread counts.
 */
export class IMClient extends ClientEvents {
  constructor({
    addresses, lastSeq = 0, requestTimeoutMs = 10000, connectTimeoutMs = 10000, reconnectDelayMs = 500,
    clientName = 'parley-js/0.1', secure, WebSocketImpl = globalThis.WebSocket,
  } = {}) {
    super();
    const lookup = typeof addresses === 'function' ? addresses : () => addresses ?? [];
    this.options = {
      addresses: lookup, requestTimeoutMs, connectTimeoutMs, reconnectDelayMs, clientName, WebSocketImpl,
      secure: secure ?? (globalThis.location?.protocol === 'https:'),
    };
    /** The highest item of the user's log delivered to the app: persist it to start the next run there. */
    this.lastSeq = lastSeq;
    this.credentials = null;
    this.link = null;
    this.heartbeat = null;
    this.reconnecting = false;
    this.syncing = false;
    this.early = [];
    this.teamSeqs = new Map();
    this.filling = new Map();
    this.closed = false;
  }

  // Login

  /** Logs in (E4: the app server's token for this account) and syncs what the device missed; resolves nextSeq. */
  async login(appKey, account, token) {
    if (this.credentials) throw new ChatroomError(ChatroomError.otherAccount, 'already logged in');
    this.credentials = { appKey, account, token };
    this.emit('connectionState', { state: 'loggingIn' });
    try {
      const next = await this.#connectAndLogin();
      this.emit('connectionState', { state: 'loggedIn' });
      return next;
    } catch (error) {
      this.credentials = null;
      this.emit('connectionState', { state: 'loginFailed', error });
      throw error;
    }
  }

  /** Closes the connection (the server forgets this device) and ends the event iterators. */
  logout() {
    this.closed = true;
    this.credentials = null;
    clearInterval(this.heartbeat);
    if (this.link) {
      const link = this.link;
      this.link = null;
      link.onClose = () => {};
      link.close();
    }
    this.finishEvents();
  }

  async #connectAndLogin() {
    const login = this.credentials;
    if (!login) throw ChatroomError.lost('logged out');
    const list = await this.options.addresses();
    if (!list?.length) throw ChatroomError.lost('no address to log in through');
    const options = { secure: this.options.secure, timeoutMs: this.options.connectTimeoutMs, WebSocketImpl: this.options.WebSocketImpl };
    return connectFirst(list, options, async (link) => {
      link.onEvent = (frame) => this.#receive(link, frame);
      link.onClose = () => this.#linkClosed(link);
      this.link = link;
      const timeout = this.options.requestTimeoutMs;
      const hello = await link.request('hello', { versions: PROTOCOL_VERSIONS, client: this.options.clientName }, timeout);
      const answer = await link.request('imLogin', {
        auth: { mode: 'im', appKey: login.appKey, account: login.account, token: login.token },
      }, timeout);
      clearInterval(this.heartbeat);
      this.heartbeat = setInterval(() => this.#beat(link), hello.heartbeatMs || 25000);
      await this.#sync();
      await this.#refillTeams();
      // Recent sessions with their unread counts (issue 38); a cluster still upgrading (5030) has none.
      try {
        this.emit('conversations', await link.request('conversations', {}, timeout));
      } catch {}
      return answer.nextSeq;
    }, { abandon: (link) => { if (this.link === link) this.link = null; } });
  }

  #linkClosed(link) {
    if (this.link !== link) return;
    this.link = null;
    clearInterval(this.heartbeat);
    if (this.closed || !this.credentials || this.reconnecting) return;
    this.emit('connectionState', { state: 'lost' });
    this.#reconnectLoop();
  }

  async #reconnectLoop() {
    this.reconnecting = true;
    try {
      for (let attempt = 1; attempt <= 20; attempt++) {
        await sleep(this.options.reconnectDelayMs * attempt);
        if (this.closed || !this.credentials) return;
        try {
          await this.#connectAndLogin();
          this.emit('connectionState', { state: 'loggedIn' });
          return;
        } catch (error) {
          if (!ReconnectPolicy.triesNextAddress(error)) {
            this.credentials = null;
            this.emit('connectionState', { state: 'loginFailed', error });
            return;
          }
        }
      }
      this.credentials = null;
      this.emit('connectionState', { state: 'loginFailed', error: ChatroomError.lost('could not log in again') });
    } finally {
      this.reconnecting = false;
    }
  }

  async #beat(link) {
    try {
      await link.request('ping', {}, this.options.requestTimeoutMs);
    } catch (error) {
      if (error.code === ChatroomError.timeout || error.code === ChatroomError.connectionLost) link.close();
    }
  }

  // Sync

  /** Delivers every item after `lastSeq` in order, page by page; live items wait meanwhile. */
  async #sync() {
    if (this.syncing) return;
    this.syncing = true;
    try {
      for (;;) {
        let page;
        try {
          page = await this.call('syncIm', { afterSeq: this.lastSeq, limit: 500 });
        } catch (error) {
          if (error.code !== ChatroomError.imLogGone) throw error;
          // The server no longer keeps what follows lastSeq: say what is lost, go on from what is kept.
          const head = await this.call('syncIm', { afterSeq: Number.MAX_SAFE_INTEGER, limit: 1 });
          this.emit('historyGone', { fromSeq: this.lastSeq + 1, toSeq: head.firstSeq - 1 });
          this.lastSeq = head.firstSeq - 1;
          continue;
        }
        for (const item of page.items) {
          if (item.seq !== this.lastSeq + 1) continue;
          this.lastSeq = item.seq;
          this.emit('item', { item });
        }
        if (page.items.length === 0 || this.lastSeq + 1 >= page.nextSeq) break;
      }
    } finally {
      this.syncing = false;
    }
    const held = this.early;
    this.early = [];
    for (const item of held) this.#admit(item);
  }

  #admit(item) {
    if (this.syncing) { this.early.push(item); return; }
    if (item.seq <= this.lastSeq) return;  // synced or delivered already
    if (item.seq !== this.lastSeq + 1) {
      // A hole (the edge's feed skipped): fill it from the log first.
      this.early.push(item);
      this.#sync().catch(() => {});
      return;
    }
    this.lastSeq = item.seq;
    this.emit('item', { item });
  }

  async #refillTeams() {
    for (const [team, seq] of this.teamSeqs) await this.#fill(team, seq);
  }

  async #fill(team, afterSeq) {
    if (this.filling.has(team)) return;
    this.filling.set(team, []);
    let cursor = afterSeq;
    try {
      for (;;) {
        // The items only: a supergroup's member list is thousands long and a fill does not need it.
        const page = await this.fetchTeam(team, { afterSeq: cursor, limit: 500, members: false });
        if (page.items.length === 0) break;
        for (const item of page.items) this.#deliverTeam(team, item, true, true);
        cursor = page.items[page.items.length - 1].seq;
        if (cursor + 1 >= page.nextSeq) break;
      }
    } catch {
      // Not reachable now: the next login refills from what was delivered.
    }
    const held = this.filling.get(team) ?? [];
    this.filling.delete(team);
    for (const [item, alert] of held) this.#deliverTeam(team, item, alert, false);
  }

  #deliverTeam(team, item, alert, isFill) {
    if (!isFill && this.filling.has(team)) { this.filling.get(team).push([item, alert]); return; }
    const last = this.teamSeqs.get(team);
    if (last !== undefined && item.seq <= last) return;
    if (last !== undefined && item.seq > last + 1 && !isFill) {
      this.#fill(team, last).then(() => this.#deliverTeam(team, item, alert, false));
      return;
    }
    this.teamSeqs.set(team, item.seq);
    this.emit('teamItem', { teamId: team, item, alert });
  }

  // Inbound

  #receive(link, frame) {
    if (this.link !== link) return;
    const f = frame.frame;
    if (frame.name === 'im') {
      switch (f.kind) {
        case 'item': if (f.item) this.#admit(f.item); break;
        case 'friendChanged': this.emit('friendChanged', { friend: f.friend, isFriend: f.isFriend }); break;
        case 'blocklistChanged': this.emit('blocklistChanged', {}); break;
        case 'muteListChanged': this.emit('muteListChanged', {}); break;
        case 'syncNeeded': this.#sync().catch(() => {}); break;
        case 'p2pRead': this.emit('p2pRead', { peer: f.peer, reader: f.reader, throughSeq: f.throughSeq }); break;
        case 'teamRead': this.emit('teamRead', { teamId: f.teamId, reader: f.reader, throughSeq: f.throughSeq }); break;
        case 'teamMembership':
          this.emit('teamMembership', { teamId: f.teamId, isMember: f.isMember });
          // A team joined: what it holds from the join on may have applied before this edge followed it.
          if (f.isMember && !this.teamSeqs.has(f.teamId)) this.#fill(f.teamId, Math.max(0, (f.fromSeq ?? 1) - 1));
          break;
        default: break;  // a kind this SDK version does not know
      }
    } else if (frame.name === 'team' && f.item) {
      this.#deliverTeam(f.teamId, f.item, f.alert !== false, false);
    }
  }

  // Requests

  /** Sends one IM op on the login's connection; resolves the answer's `data`. */
  call(op, fields = {}) {
    if (!this.credentials || !this.link) return Promise.reject(ChatroomError.lost('not logged in'));
    return this.link.request(op, fields, this.options.requestTimeoutMs);
  }

  // Friends (seed 004)

  /** operation: 'add' | 'request' | 'verify' | 'reject'. */
  async requestFriend(target, operation, message) { await this.call('friend', { target, operation, message }); }
  async deleteFriend(target, removeAlias = false) { await this.call('deleteFriend', { target, removeRemark: removeAlias }); }
  async updateRemark(remark, target) { await this.call('updateRemark', { target, remark }); }
  async relations() { return (await this.call('relations')).relations; }
  async myFriends() { return (await this.relations()).friends; }
  async isMyFriend(account) { return (await this.myFriends()).some((f) => f.account === account); }

  // Blocklist and do-not-disturb

  async addToBlackList(account) { await this.call('setBlocked', { target: account, blocked: true }); }
  /** The seed's spelling. */
  async removeFromBlackBlackList(account) { await this.call('setBlocked', { target: account, blocked: false }); }
  async myBlackList() { return (await this.relations()).blocked; }
  async isUserInBlackList(account) { return (await this.myBlackList()).includes(account); }
  /** updateNotifyState:forUser: — `notify` false puts the user on the do-not-disturb list. */
  async updateNotifyStateForUser(account, notify) { await this.call('setMuted', { target: account, muted: !notify }); }
  async notifyForNewMsg(account) { return !(await this.relations()).muted.includes(account); }

  // Messages

  /**
   * Sends to a user (`{p2p: account}`) or a team (`{team: teamId}`); resolves the seq. A resend with the same
   * clientMessageId is answered with the first send's seq.
   */
  async sendMessage(to, { type = 'text', body, ext, clientMessageId } = {}) {
    const fields = { type, body, ext, clientMessageId: clientMessageId ?? newClientMessageId() };
    if (to?.p2p !== undefined) return (await this.call('sendP2P', { ...fields, to: to.p2p })).seq;
    if (to?.team !== undefined) return (await this.call('sendTeamMessage', { ...fields, teamId: to.team })).seq;
    throw new TypeError('sendMessage needs {p2p: account} or {team: teamId}');
  }

  // Read receipts (issue 38)

  /**
   * NIM's sendMessageReceipt / seed 001's sendTeamMessageReceipts: this user read `{p2p: peer}` through
   * `throughSeq` of its own log (a received message's seq), or `{team: teamId}` through the team's sequence.
   */
  async markRead(conversation, throughSeq) {
    if (conversation?.p2p !== undefined) return void await this.call('markRead', { peer: conversation.p2p, throughSeq });
    if (conversation?.team !== undefined) return void await this.call('markRead', { teamId: conversation.team, throughSeq });
    throw new TypeError('markRead needs {p2p: account} or {team: teamId}');
  }

  /** Seed 001's refreshTeamMessageReceipts: who read the team's messages at `seqs` (1 … 100). */
  async teamReceipts(teamId, seqs) { return (await this.call('teamReceipts', { teamId, seqs })).receipts; }

  /**
   * The user's conversations, each list newest first: `{conversations: [{peer, last, unread, readThrough,
   * peerReadThrough}], teams: [{teamId, last, unread, readThrough}]}`.
   */
  async conversations() { return this.call('conversations'); }

  // Teams (seed 001)

  /**
   * options: intro, announcement, avatar, joinMode, inviteMode, beInviteMode, updateInfoMode, and type:
   * 'advanced' (the default) or 'superTeam' (a supergroup of up to 10,000 members).
   */
  async createTeam(teamId, name, options = {}) {
    const fields = { teamId, name };
    for (const key of TEAM_FIELDS) fields[key] = options[key];
    await this.call('teamCreate', fields);
  }

  async addUsers(accounts, teamId, postscript) { await this.call('teamInvite', { teamId, targets: accounts, postscript }); }
  async acceptInvite(teamId) { await this.call('teamAcceptInvitation', { teamId }); }
  async rejectInvite(teamId) { await this.call('teamRejectInvitation', { teamId }); }
  async applyToTeam(teamId, message) { await this.call('teamApply', { teamId, message }); }
  async passApply(teamId, applicant) { await this.call('teamApproveApplication', { teamId, applicant }); }
  async rejectApply(teamId, applicant) { await this.call('teamRejectApplication', { teamId, applicant }); }
  async kickUsers(accounts, teamId) { await this.call('teamKick', { teamId, targets: accounts }); }
  async quitTeam(teamId) { await this.call('teamLeave', { teamId }); }
  async dismissTeam(teamId) { await this.call('teamDismiss', { teamId }); }

  /** update: any of name, intro, announcement, avatar, the four modes, muteAll. */
  async updateTeam(teamId, update) {
    const fields = { teamId, name: update.name, muteAll: update.muteAll };
    for (const key of TEAM_FIELDS) fields[key] = update[key];
    await this.call('teamUpdate', fields);
  }

  async transferOwner(teamId, to, leave = false) { await this.call('teamTransferOwner', { teamId, to, leave }); }
  async addManagers(teamId, users) { await this.call('teamAddManagers', { teamId, accounts: users }); }
  async removeManagers(teamId, users) { await this.call('teamRemoveManagers', { teamId, accounts: users }); }
  async updateMuteState(muted, account, teamId) { await this.call('teamMuteMember', { teamId, account, muted }); }
  /** Team do-not-disturb: 'all' | 'none' | 'onlyManager'. */
  async updateNotifyStateInTeam(teamId, state) { await this.call('teamSetNotifyState', { teamId, state }); }

  async notifyStateForNewMsg(teamId) {
    const account = this.credentials?.account;
    const team = await this.fetchTeam(teamId, { afterSeq: Number.MAX_SAFE_INTEGER - 1, limit: 1 });
    const me = team.members.find((m) => m.account === account);
    if (!me) throw new ChatroomError(14214, `not a member of ${teamId}`);
    return me.notifyState;
  }

  /**
   * A team's info, members and its log after `afterSeq` (at most `limit` items, 1 … 500); `members: false`
   * leaves the member list out (empty: a supergroup's is thousands long).
   */
  async fetchTeam(teamId, { afterSeq = 0, limit = 100, members = true } = {}) {
    const fields = { teamId, afterSeq, limit };
    if (!members) fields.members = false;
    return (await this.call('teamQuery', fields)).team;
  }
}
