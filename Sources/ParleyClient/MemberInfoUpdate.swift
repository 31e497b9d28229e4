/// The fields `updateMyChatroomMemberInfo` can change; nil leaves a field as it is.
public struct MemberInfoUpdate: Sendable, Hashable {
    public var nickname: String?
    public var avatar: String?
    public var ext: String?

    public init(nickname: String? = nil, avatar: String? = nil, ext: String? = nil) {
        self.nickname = nickname
        self.avatar = avatar
        self.ext = ext
    }
}
