// TypeScript declarations of Parley's JavaScript SDK (parley.js). docs/sdk.md, "JavaScript".

export declare class ChatroomError extends Error {
  constructor(code: number, message: string, retryAfterMs?: number);
  /** The server's code (docs/protocol.md, docs/rooms.md) or the SDK's own 408 / 415. */
  readonly code: number;
  /** The server's message. */
  readonly reason: string;
  /** 416 and 4017: how long to wait before trying again. */
  readonly retryAfterMs?: number;
  static readonly timeout: 408;
  static readonly connectionLost: 415;
  static readonly noPermission: 403;
  static readonly roomNotFound: 404;
  static readonly badParameter: 414;
  static readonly rateLimited: 416;
  static readonly roomClosed: 13002;
  static readonly inBlocklist: 13003;
  static readonly notEntered: 13100;
  static readonly anonymousCannotSend: 13102;
  static readonly historyGone: 13112;
  static readonly noCommonVersion: 4001;
  static readonly badToken: 4010;
  static readonly tokenExpired: 4011;
  static readonly unknownApp: 4012;
  static readonly otherAccount: 4013;
  static readonly tokenRevoked: 4015;
  static readonly alreadyInRoom: 4016;
  static readonly tooManyLogins: 4017;
  static readonly notLoggedIn: 4018;
  static readonly noLeader: 5030;
  static readonly clusterTimeout: 5040;
  static readonly imLogGone: 14207;
}

export type Auth =
  | { mode: 'im' | 'independent'; appKey: string; account: string; token: string }
  | { mode: 'anonymous'; appKey: string };

export interface Room {
  roomId: string; name: string; announcement: string; creator: string; ext: string; broadcastUrl: string;
  queueLevel: number; isMuted: boolean; isOpen: boolean; onlineUserCount: number; seq: number;
}

export type MemberType = 'creator' | 'manager' | 'common' | 'limited' | 'visitor';

export interface Member {
  userId: string; nickname: string; avatar: string; ext: string; type: MemberType; isMuted: boolean;
  isTempMuted: boolean; tempMuteDuration: number; isInBlackList: boolean; isOnline: boolean; enterTime: number;
  pageKey: number;
}

/** D3: what edges may shed above a room's delivered-rate ceiling (absent on a message: normal). */
export type MessagePriority = 'high' | 'normal' | 'low';

export interface Message {
  seq: number; serverId: number; time: number; from: string; fromNickname: string; fromAvatar: string;
  fromExt: string; type: string; clientMessageId: string; body: string; ext: string; priority?: MessagePriority;
}

export interface ChatroomNotification {
  seq: number; time: number;
  /** 301 enter … 320 queueBatchChange (docs/protocol.md). */
  type: number;
  source: { userId: string; nickname: string }; sourceExt: string;
  targets: { userId: string; nickname: string }[]; notifyExt: string; ext: unknown;
}

export type HistoryItem = ({ kind: 'message' } & Message) | ({ kind: 'notification' } & ChatroomNotification);

export interface QueueElement { key: string; value: string }

export interface EnterResult {
  room: Room; member: Member; authMode: 'im' | 'independent' | 'anonymous'; account: string;
  resumed: boolean; gapTooOld: boolean; replayFromSeq?: number;
}

export interface SendReceipt { seq: number; time: number; serverId: number }

export type ConnectionStateName = 'entering' | 'enterOK' | 'enterFailed' | 'loseConnection';
export declare const ConnectionState: Readonly<Record<ConnectionStateName, number>>;

/** Every event a ChatroomClient reports: `{type, roomId, seq, data}`. */
export interface RoomEventMap {
  message: Message;
  notification: ChatroomNotification;
  kicked: { reason: number; ext: string };
  status: { status: 'joined' | 'quit' | 'destroyed' | 'lost'; memberCount?: number; time?: number; type?: number };
  memberChange: { actions: { userId: string; action: 'join' | 'quit' }[]; memberCount: number };
  multiLoginSync: { joined: boolean; reason: number; time: number };
  block: { blocked: boolean; durationMs: number; operateTime: number; userIds: string[]; extra: string };
  ban: { banType: number; durationMs: number; operateTime: number; userIds: string[]; extra: string };
  gap: { fromSeq: number; toSeq: number };
  /** D2 / D3: these seqs were not delivered (above the room's ceiling, or skipped while behind); fetch them from history. */
  shed: { reason: 'rate' | 'slow'; ranges: [number, number][] };
  connectionState: { state: ConnectionStateName; code: number };
  autoLoginFailed: { error: ChatroomError };
}

export type RoomEvent = { [K in keyof RoomEventMap]: { type: K; roomId: string; seq: number; data: RoomEventMap[K] } }[keyof RoomEventMap];

export interface ChatroomClientOptions {
  /** The app server's room address lookup (E6, requestAddr): edges best first, asked on every enter and re-enter. */
  addressLookup: (roomId: string) => Promise<string[]> | string[];
  requestTimeoutMs?: number;
  connectTimeoutMs?: number;
  /** Re-enter attempt n waits n × this. */
  reconnectDelayMs?: number;
  clientName?: string;
  /** wss:// for host:port addresses (default: when the page itself is https). */
  secure?: boolean;
  /** Tries of a message over budget (416) after its retryAfterMs; 0 rejects at once. Default 3. */
  rateLimitRetries?: number;
  WebSocketImpl?: typeof WebSocket;
}

interface Events<Event extends { type: string }> {
  addEventListener<K extends Event['type']>(type: K, listener: (event: CustomEvent<Extract<Event, { type: K }>>) => void, options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends Event['type']>(type: K, listener: (event: CustomEvent<Extract<Event, { type: K }>>) => void, options?: boolean | EventListenerOptions): void;
  /** Every event from now on, in order, until the loop leaves or the client closes. */
  events(): AsyncIterableIterator<Event>;
}

/** An `EventTarget` at run time; typed here so only its own event names are accepted. */
export declare class ChatroomClient implements Events<RoomEvent> {
  constructor(options: ChatroomClientOptions);
  static addresses(list: string[]): (roomId: string) => string[];
  addEventListener<K extends RoomEvent['type']>(type: K, listener: (event: CustomEvent<Extract<RoomEvent, { type: K }>>) => void, options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends RoomEvent['type']>(type: K, listener: (event: CustomEvent<Extract<RoomEvent, { type: K }>>) => void, options?: boolean | EventListenerOptions): void;
  events(): AsyncIterableIterator<RoomEvent>;
  dispatchEvent(event: Event): boolean;
  readonly enteredRoomIds: string[];
  ledger(roomId: string): ResumeLedger | undefined;

  enterChatroom(request: { roomId: string; auth: Auth; nickname?: string; avatar?: string; roomExt?: string;
                           roomNotifyExt?: string; retryCount?: number }): Promise<EnterResult>;
  exitChatroom(roomId: string): Promise<void>;
  close(): void;
  authMode(roomId: string): Promise<'im' | 'independent' | 'anonymous'>;
  sendMessage(roomId: string, message: { type?: string; body: string; ext?: string; clientMessageId?: string; priority?: MessagePriority }): Promise<SendReceipt>;
  fetchMessageHistory(roomId: string, query?: { startTime?: number; limit?: number; order?: 'asc' | 'desc'; types?: string[] }): Promise<HistoryItem[]>;
  fetchChatroomInfo(roomId: string): Promise<Room>;
  updateChatroomInfo(roomId: string, update: { name?: string; announcement?: string; broadcastUrl?: string; ext?: string; queueLevel?: 0 | 1 },
                     notify?: { needNotify?: boolean; notifyExt?: string }): Promise<void>;
  setRoomMute(roomId: string, enable: boolean, notify?: { needNotify?: boolean; notifyExt?: string }): Promise<void>;
  updateAllowlist(roomId: string, enable: boolean, userIds: string[]): Promise<void>;
  fetchChatroomMembers(roomId: string, query?: { type?: 'regular' | 'temp' | 'regularOnline' | 'unregularReversed'; anchor?: number; limit?: number }): Promise<Member[]>;
  fetchChatroomMembersByIds(roomId: string, userIds: string[]): Promise<Member[]>;
  updateMyChatroomMemberInfo(roomId: string, update: { nickname?: string; avatar?: string; ext?: string },
                             notify?: { needNotify?: boolean; notifyExt?: string }): Promise<void>;
  markMemberManager(roomId: string, userId: string, enable: boolean, notify?: { notifyExt?: string }): Promise<void>;
  markNormalMember(roomId: string, userId: string, enable: boolean, notify?: { notifyExt?: string }): Promise<void>;
  updateMemberBlack(roomId: string, userId: string, enable: boolean, notify?: { notifyExt?: string }): Promise<void>;
  updateMemberMute(roomId: string, userId: string, enable: boolean, notify?: { notifyExt?: string }): Promise<void>;
  /** `duration` in seconds; 0 lifts it. */
  updateMemberTempMute(roomId: string, userId: string, duration: number, notify?: { needNotify?: boolean; notifyExt?: string }): Promise<void>;
  kickMember(roomId: string, userId: string, notify?: { notifyExt?: string }): Promise<void>;
  fetchChatroomQueue(roomId: string): Promise<QueueElement[]>;
  updateChatroomQueueObject(roomId: string, element: QueueElement, options?: { transient?: boolean }): Promise<void>;
  batchUpdateChatroomQueueObject(roomId: string, elements: QueueElement[], notify?: { needNotify?: boolean; notifyExt?: string }): Promise<string[]>;
  removeChatroomQueueObject(roomId: string, key?: string): Promise<QueueElement>;
  dropChatroomQueue(roomId: string): Promise<void>;
  /** Any room op by name: resolves the answer's `data`. */
  call(roomId: string, op: string, fields?: Record<string, unknown>): Promise<any>;
}

// IM

export interface ImItem {
  seq: number; time: number; kind: 'message' | 'friendAdd' | 'teamNotice' | string;
  from?: string; to?: string; msgId?: string; type?: string; body?: string; ext?: string; receiverSeq?: number;
  alert?: boolean; source?: string; target?: string; teamId?: string; operation?: number; msg?: string;
}

export interface TeamItem {
  seq: number; time: number; kind: 'message' | 'notification';
  from?: string; msgId?: string; type?: string; body?: string; ext?: string;
  operation?: number; source?: string; targets?: string[]; notifyExt?: string; attachment?: Record<string, string>;
}

export interface Relations {
  friends: { account: string; remark: string; since: number }[];
  incoming: { account: string; message: string; time: number }[];
  outgoing: { account: string; message: string; time: number }[];
  blocked: string[]; muted: string[]; teams: string[];
}

/** Who read one team message (issue 38). */
export interface TeamReceipt { seq: number; from: string; readCount: number; unreadCount: number; readers: string[]; unread: string[] }

/** One of the user's one-to-one conversations (issue 38). */
export interface Conversation { peer: string; last: ImItem; unread: number; readThrough: number; peerReadThrough: number }

/** One of the user's teams as a conversation (issue 38): newest message, unread count, position. */
export interface TeamConversation { teamId: string; last: TeamItem | null; unread: number; readThrough: number }

export type TeamNotifyState = 'all' | 'none' | 'onlyManager';

export interface TeamOptions {
  intro?: string; announcement?: string; avatar?: string; joinMode?: 'noAuth' | 'needAuth' | 'rejectAll';
  inviteMode?: 'manager' | 'all'; beInviteMode?: 'needAuth' | 'noAuth'; updateInfoMode?: 'manager' | 'all';
  /** 'advanced' (the default) or 'superTeam': a supergroup of up to 10,000 members. */
  type?: TeamType;
}

export type TeamType = 'advanced' | 'superTeam';

export interface TeamSnapshot {
  teamId: string; type: TeamType; name: string; intro: string; announcement: string; avatar: string; joinMode: string;
  inviteMode: string; beInviteMode: string; updateInfoMode: string; muteAll: boolean; owner: string;
  members: { account: string; role: string; muted: boolean; notifyState: TeamNotifyState; joinedAt: number }[];
  items: TeamItem[]; nextSeq: number;
}

export type ImEvent =
  | { type: 'item'; item: ImItem }
  | { type: 'friendChanged'; friend: string; isFriend: boolean }
  | { type: 'blocklistChanged' }
  | { type: 'muteListChanged' }
  | { type: 'teamMembership'; teamId: string; isMember: boolean }
  | { type: 'teamItem'; teamId: string; item: TeamItem; alert: boolean }
  | { type: 'historyGone'; fromSeq: number; toSeq: number }
  | { type: 'p2pRead'; peer: string; reader: string; throughSeq: number }
  | { type: 'teamRead'; teamId: string; reader: string; throughSeq: number }
  | { type: 'conversations'; conversations: Conversation[]; teams: TeamConversation[] }
  | { type: 'connectionState'; state: 'loggingIn' | 'loggedIn' | 'lost' | 'loginFailed'; error?: ChatroomError };

export interface IMClientOptions {
  /** Edges to log in through, best first (or a function answering them). */
  addresses: string[] | (() => Promise<string[]> | string[]);
  /** The highest log item this device already has (persist `client.lastSeq` across runs). */
  lastSeq?: number;
  requestTimeoutMs?: number;
  connectTimeoutMs?: number;
  reconnectDelayMs?: number;
  clientName?: string;
  secure?: boolean;
  WebSocketImpl?: typeof WebSocket;
}

/** An `EventTarget` at run time; typed here so only its own event names are accepted. */
export declare class IMClient implements Events<ImEvent> {
  constructor(options: IMClientOptions);
  addEventListener<K extends ImEvent['type']>(type: K, listener: (event: CustomEvent<Extract<ImEvent, { type: K }>>) => void, options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends ImEvent['type']>(type: K, listener: (event: CustomEvent<Extract<ImEvent, { type: K }>>) => void, options?: boolean | EventListenerOptions): void;
  events(): AsyncIterableIterator<ImEvent>;
  dispatchEvent(event: Event): boolean;
  readonly lastSeq: number;
  login(appKey: string, account: string, token: string): Promise<number>;
  logout(): void;
  requestFriend(target: string, operation: 'add' | 'request' | 'verify' | 'reject', message?: string): Promise<void>;
  deleteFriend(target: string, removeAlias?: boolean): Promise<void>;
  updateRemark(remark: string, target: string): Promise<void>;
  relations(): Promise<Relations>;
  myFriends(): Promise<Relations['friends']>;
  isMyFriend(account: string): Promise<boolean>;
  addToBlackList(account: string): Promise<void>;
  removeFromBlackBlackList(account: string): Promise<void>;
  myBlackList(): Promise<string[]>;
  isUserInBlackList(account: string): Promise<boolean>;
  updateNotifyStateForUser(account: string, notify: boolean): Promise<void>;
  notifyForNewMsg(account: string): Promise<boolean>;
  sendMessage(to: { p2p: string } | { team: string }, message: { type?: string; body: string; ext?: string; clientMessageId?: string }): Promise<number>;
  createTeam(teamId: string, name: string, options?: TeamOptions): Promise<void>;
  addUsers(accounts: string[], teamId: string, postscript?: string): Promise<void>;
  acceptInvite(teamId: string): Promise<void>;
  rejectInvite(teamId: string): Promise<void>;
  applyToTeam(teamId: string, message?: string): Promise<void>;
  passApply(teamId: string, applicant: string): Promise<void>;
  rejectApply(teamId: string, applicant: string): Promise<void>;
  kickUsers(accounts: string[], teamId: string): Promise<void>;
  quitTeam(teamId: string): Promise<void>;
  dismissTeam(teamId: string): Promise<void>;
  updateTeam(teamId: string, update: TeamOptions & { name?: string; muteAll?: boolean }): Promise<void>;
  transferOwner(teamId: string, to: string, leave?: boolean): Promise<void>;
  addManagers(teamId: string, users: string[]): Promise<void>;
  removeManagers(teamId: string, users: string[]): Promise<void>;
  updateMuteState(muted: boolean, account: string, teamId: string): Promise<void>;
  updateNotifyStateInTeam(teamId: string, state: TeamNotifyState): Promise<void>;
  notifyStateForNewMsg(teamId: string): Promise<TeamNotifyState>;
  fetchTeam(teamId: string, query?: { afterSeq?: number; limit?: number; members?: boolean }): Promise<TeamSnapshot>;
  markRead(conversation: { p2p: string } | { team: string }, throughSeq: number): Promise<void>;
  teamReceipts(teamId: string, seqs: number[]): Promise<TeamReceipt[]>;
  conversations(): Promise<{ conversations: Conversation[]; teams: TeamConversation[] }>;
  call(op: string, fields?: Record<string, unknown>): Promise<any>;
}

export declare class ResumeLedger {
  readonly lastSeq: number;
  readonly enterSeq: number;
  readonly resumePoint: number;
  entered(answer: { roomSeq: number; resumed: boolean; gapTooOld: boolean; replayFromSeq?: number; reentered: boolean }): { fromSeq: number; toSeq: number } | null;
  admit(seq: number): boolean;
  skip(throughSeq: number): void;
}

export declare class ReconnectPolicy {
  constructor(options?: { retryCount?: number; delayMs?: number });
  retryCount: number;
  delayMs: number;
  waitBeforeAttempt(attempt: number): number;
  static endsRetrying(error: { code?: number }): boolean;
  static triesNextAddress(error: { code?: number }): boolean;
  static readonly finalCodes: Set<number>;
}

export declare const PROTOCOL_VERSIONS: number[];
export declare const ROOM_OPS: Readonly<Record<string, string>>;
export declare const ROOM_EVENTS: readonly string[];
export declare const IM_OPS: Readonly<Record<string, string>>;
export declare const IM_EVENTS: Readonly<Record<string, string>>;
export declare function newClientMessageId(): string;
export declare function requestFrame(id: number, op: string, fields?: Record<string, unknown>): string;
export declare function decodeFrame(text: string): { kind: 'answer'; id: number; ok: boolean; data?: any; error?: ChatroomError } | { kind: 'event'; name: string; roomId?: string; seq: number; data: any; frame: any };
export declare function edgeURL(address: string, secure: boolean): string;
export declare class Link {
  static open(address: string, options?: { secure?: boolean; timeoutMs?: number; WebSocketImpl?: typeof WebSocket }): Promise<Link>;
  readonly address: string;
  request(op: string, fields: Record<string, unknown>, timeoutMs: number): Promise<any>;
  close(): void;
}
