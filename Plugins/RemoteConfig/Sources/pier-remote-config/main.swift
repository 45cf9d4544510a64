import Glibc
import PierService
import RemoteConfig

// The plugin alone: `pier-remote-config serve|migrate`, on PIER_PORT (8090 by default).
let executable = Executable(
    name: "pier-remote-config", defaultPort: RemoteConfigService.defaultPort, plugins: [Plugin(RemoteConfigService.self)],
    summary: "remote config and feature flags, alone")
exit(await executable.main())
