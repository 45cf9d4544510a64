import Foundation
import PierModels

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Feedback from the app: sent safely (a retry never stores it twice), kept when offline.
public final class PierFeedback: Sendable {
    let authorized: Authorized
    let outbox: URL?
    let installationID: String
    let attestations: InstallationTokens?

    init(_ authorized: Authorized, outbox: URL?, installationID: String, attestations: InstallationTokens?) {
        self.authorized = authorized
        self.outbox = outbox
        self.installationID = installationID
        self.attestations = attestations
    }

    /// The id kept in the outbox directory, made the first time: queued feedback sent after a
    /// relaunch is the same installation's.
    static func installationID(in outbox: URL) -> String {
        let file = outbox.appendingPathComponent("installation-id")
        if let data = try? Data(contentsOf: file), let id = String(data: data, encoding: .utf8), !id.isEmpty { return id }
        let id = UUID().uuidString.lowercased()
        try? FileManager.default.createDirectory(at: outbox, withIntermediateDirectories: true)
        try? Data(id.utf8).write(to: file, options: .atomic)
        return id
    }

    /// Sends `feedback` (as the signed-in user, or anonymously) and returns the stored item.
    /// Retried on transient failures under its client id, so the server stores it once. With an
    /// outbox, a feedback that still cannot be sent is kept there (the error says
    /// ``PierError/queuedForRetry``; ``PierError/isOffline`` tells an outage from a limit) and
    /// sent by ``flushOutbox()``. The ids of the calls that failed since the last feedback ride
    /// along (`requestIds`, unless you set them), for support to find in the logs.
    @discardableResult
    public func send(_ feedback: NewFeedback) async throws(PierError) -> FeedbackItem {
        var feedback = feedback
        let id = feedback.id ?? UUID()
        feedback.id = id
        var attached: [String] = []
        if feedback.requestIds == nil {
            attached = authorized.transport.failedRequestIDs
            if !attached.isEmpty { feedback.requestIds = attached }
        }
        let file = outbox.map { $0.appendingPathComponent("\(id.uuidString.lowercased()).json") }
        if let outbox, let file {
            try? FileManager.default.createDirectory(at: outbox, withIntermediateDirectories: true)
            try? Transport.encoder.encode(feedback).write(to: file, options: .atomic)
        }
        do {
            let item = try await deliver(feedback)
            if let file { try? FileManager.default.removeItem(at: file) }
            authorized.transport.forget(failedRequestIDs: attached)
            return item
        } catch {
            guard let file else { throw error }
            guard error.isTransient else {
                try? FileManager.default.removeItem(at: file)
                throw error
            }
            authorized.transport.forget(failedRequestIDs: attached)  // the queued feedback has them
            var queued = error
            queued.queuedForRetry = true
            throw queued
        }
    }

    /// Sends what the outbox holds, oldest first, and returns how many were stored; stops at
    /// the first transient failure (the rest wait for the next call). Each keeps its client id,
    /// so one sent twice (a crash between sending and forgetting it) is stored once.
    @discardableResult
    public func flushOutbox() async -> Int {
        guard let outbox,
            let files = try? FileManager.default.contentsOfDirectory(
                at: outbox, includingPropertiesForKeys: [.contentModificationDateKey])
        else { return 0 }
        let queued = files.filter { $0.pathExtension == "json" }.sorted {
            let left = (try? $0.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate) ?? .distantPast
            let right = (try? $1.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate) ?? .distantPast
            return left < right
        }
        var sent = 0
        for file in queued {
            guard let data = try? Data(contentsOf: file),
                let feedback = try? Transport.decoder.decode(NewFeedback.self, from: data)
            else {
                try? FileManager.default.removeItem(at: file)
                continue
            }
            do {
                _ = try await deliver(feedback)
                sent += 1
                try? FileManager.default.removeItem(at: file)
            } catch {
                if error.isTransient { break }
                try? FileManager.default.removeItem(at: file)
            }
        }
        return sent
    }

    /// How many feedbacks wait in the outbox.
    public var queuedCount: Int {
        guard let outbox, let files = try? FileManager.default.contentsOfDirectory(atPath: outbox.path) else { return 0 }
        return files.filter { $0.hasSuffix(".json") }.count
    }

    /// Anonymous feedback carries the installation token when ``PierClient/Options/appAttestation``
    /// is set; one the server refuses (its keys changed) is made again once.
    private func deliver(_ feedback: NewFeedback) async throws(PierError) -> FeedbackItem {
        let signedIn = await authorized.sessions.current() != nil
        var sender = FeedbackSender(installationID: installationID)
        guard !signedIn, let attestations else {
            return try await authorized.call(FeedbackAPI.create, sender, body: feedback, signedIn: signedIn)
        }
        sender.installationToken = try await attestations.token(authorized, installation: installationID)
        do throws(PierError) {
            return try await authorized.call(FeedbackAPI.create, sender, body: feedback, signedIn: false)
        } catch {
            guard error.code == .invalidAttestation, sender.installationToken != nil else { throw error }
            attestations.forget()
            sender.installationToken = try await attestations.token(authorized, installation: installationID)
            return try await authorized.call(FeedbackAPI.create, sender, body: feedback, signedIn: false)
        }
    }

    /// The signed-in user's own feedback, newest first; pass a page's `nextCursor` for the next.
    public func mine(limit: Int = 20, cursor: String? = nil) async throws(PierError) -> FeedbackPage {
        try await authorized.call(FeedbackAPI.mine, PageQuery(limit: limit, cursor: cursor))
    }
}

/// A feedback to send: the server's own request type. Only `message` is required; `id` (made
/// for you when nil) is what makes a retry safe.
public typealias NewFeedback = CreateFeedback
