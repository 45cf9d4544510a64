import Gateway
import Glibc

// Pier's own plugins behind one port; `pier-gateway openapi` prints the API document (`make
// openapi` writes it to docs/openapi.json).
exit(await Gateway.main(plugins: Gateway.builtIn))
