import Gateway
import Glibc
import PierService
import RemoteConfig

// Pier's own plugins and remote config behind one port: `gateway-with-config serve --embed
// auth,feedback,subscriptions,console,config --migrate`.
exit(await Gateway.main(plugins: Gateway.builtIn + [Plugin(RemoteConfigService.self)], name: "gateway-with-config"))
