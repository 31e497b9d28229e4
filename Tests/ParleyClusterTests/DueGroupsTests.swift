import Testing
@testable import ParleyCluster
@testable import ParleyHost

@Suite struct DueGroupsTests {
    @Test("DESIGN: a ready cycle takes each marked group once, in the host's order, and starts empty again")
    func marksAreTakenOnceInOrder() {
        var due = DueGroups(count: 8)
        #expect(due.isEmpty)
        due.mark(5)
        due.mark(2)
        due.mark(5)
        #expect(due.take() == [2, 5])
        #expect(due.isEmpty)
        #expect(due.take() == [])
        due.mark(5)  // marked again after being taken
        #expect(due.take() == [5])
    }

    @Test func markingAllTakesEveryGroup() {
        var due = DueGroups(count: 4)
        due.mark(3)
        due.markAll()
        #expect(due.take() == [0, 1, 2, 3])
    }
}
