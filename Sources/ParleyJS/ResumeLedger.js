// One room's sequence bookkeeping (X2), the Swift SDK's `ResumeLedger`: which room events the app has seen,
// where a re-enter resumes, and which events are duplicates. Pure, so the rules are tested without a network.
//
// Two numbers because they answer different questions: `lastSeq` is the highest room seq handed to the app
// (anything at or below it is a duplicate); `enterSeq` is the room's seq in a fresh enter's answer (what came
// before the session existed, never replayed). `enterSeq` is not used for dropping: the enter's own 301 may
// carry exactly that seq.
export class ResumeLedger {
  constructor() {
    this.lastSeq = 0;
    this.enterSeq = 0;
  }

  /** The `lastSeq` a re-enter sends: the server replays what came after it. */
  get resumePoint() { return Math.max(this.lastSeq, this.enterSeq); }

  /**
   * Records an enter answer; returns the range the app can no longer get by replay ({fromSeq, toSeq}) or null.
   * A resumed answer changes nothing: the replay continues from `resumePoint`.
   */
  entered({ roomSeq, resumed, gapTooOld, replayFromSeq, reentered }) {
    if (resumed) return null;
    let lost = null;
    const lostThrough = Math.min(roomSeq, (replayFromSeq ?? roomSeq + 1) - 1);
    if (reentered && gapTooOld && lostThrough > this.resumePoint) {
      lost = { fromSeq: this.resumePoint + 1, toSeq: lostThrough };
    }
    this.enterSeq = Math.max(this.enterSeq, roomSeq);
    return lost;
  }

  /** Whether a room event is new. seq 0 events (to a user or session) always pass. */
  admit(seq) {
    if (!seq) return true;
    if (seq <= this.lastSeq) return false;
    this.lastSeq = seq;
    return true;
  }

  /** A `gap`: the range will never come, so a re-enter does not ask for it again. */
  skip(throughSeq) { this.lastSeq = Math.max(this.lastSeq, throughSeq); }
}
