import ConsoleService
import Glibc
import PierService

// Alone, the console reaches Pier's API over HTTP and must be told where (hosted by the
// gateway, it calls the process's own routes instead): serving without it is refused at once.
let words = CommandLine.arguments.dropFirst()
let serving =
    (words.first { !$0.hasPrefix("-") } ?? "serve") == "serve" && !words.contains { ["--help", "--version"].contains($0) }
if serving, getenv("PIER_CONSOLE_API_URL") == nil {
    Executable.printError(
        "pier-console: configuration error: PIER_CONSOLE_API_URL is required: Pier's API (the gateway), such as http://gateway:8080"
    )
    exit(2)
}
exit(await Executable.standalone(ConsoleService.self).main())
