import Foundation
import PierClient
import PierModels

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension AdminCommands {
    /// Streams the export to `path` (or standard output) as it arrives, counting items on the
    /// terminal; the body is never held whole.
    static func export(_ request: URLRequest, header: Bool, to path: String?) async throws {
        let output: FileHandle
        if let path {
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw CLIError.failed("cannot write \(path)", code: 1)
            }
            output = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        } else {
            output = FileHandle.standardOutput
        }
        let download = Download(output: output, header: header, progress: isatty(2) == 1)
        let session = URLSession(configuration: .ephemeral, delegate: download, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let outcome = await withCheckedContinuation { continuation in
            download.finished = { continuation.resume(returning: $0) }
            session.dataTask(with: request).resume()
        }
        if path != nil { try output.close() }
        switch outcome {
        case .failure(let message): throw CLIError.failed(message, code: 6)
        case .refused(let status, let body):
            let decoder = JSONDecoder()
            let problem = try? decoder.decode(Problem.self, from: body)
            throw CLIError.failed(
                problem?.detail ?? "the server answered \(status)", code: status == 401 || status == 403 ? 3 : 1)
        case .done(let items, let bytes):
            if download.progress || path != nil { standardError("\rexported \(items) items (\(bytes) bytes)") }
        }
    }
}

/// Receives the export chunk by chunk (URLSession's delegate), writing each as it comes.
final class Download: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    enum Outcome { case done(items: Int, bytes: Int), refused(Int, Data), failure(String) }

    let output: FileHandle
    let header: Bool
    let progress: Bool
    var finished: ((Outcome) -> Void)?
    private var status = 0
    private var refusal = Data()
    private var lines = 0
    private var bytes = 0
    private var lastShown = Date.distantPast

    init(output: FileHandle, header: Bool, progress: Bool) {
        self.output = output
        self.header = header
        self.progress = progress
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        status = (response as? HTTPURLResponse)?.statusCode ?? 0
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard status == 200 else {
            refusal.append(data)
            return
        }
        output.write(data)
        bytes += data.count
        lines += data.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
        if progress, Date().timeIntervalSince(lastShown) > 0.2 {
            lastShown = Date()
            FileHandle.standardError.write(Data("\r\(items) items…".utf8))
        }
    }

    private var items: Int { max(0, header ? lines - 1 : lines) }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        if let error {
            finished?(.failure("the export was cut off: \(error.localizedDescription)"))
        } else if status != 200 {
            finished?(.refused(status, refusal))
        } else {
            finished?(.done(items: items, bytes: bytes))
        }
        finished = nil
    }
}
