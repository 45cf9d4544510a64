import Gateway
import Glibc

// `pier-gateway openapi`: the API document on standard output (`make openapi` writes it to
// docs/openapi.json).
if CommandLine.arguments.dropFirst().first == "openapi" { exit(Gateway.writeDocument()) }
exit(await Gateway.executable.main())
