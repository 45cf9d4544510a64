// `import PierPlugin`: everything a plugin is written with, in one import (docs/plugins.md): hosting
// and the plugin contract (PierService), live streams (PierLive), HTTP (PierHTTP), the database
// (PierPostgres), callers and their roles (PierIdentity), the audit and event logs (PierAudit,
// PierEvents), console pages (PierHTML), JSON (PierJSON), the runtime's lifecycle and logs
// (PierRuntime), and the wire types with `Endpoint` (PierModels). The modules stay importable one
// by one.
@_exported import PierAudit
@_exported import PierEvents
@_exported import PierHTML
@_exported import PierHTTP
@_exported import PierIdentity
@_exported import PierJSON
@_exported import PierLive
@_exported import PierModels
@_exported import PierPostgres
@_exported import PierRuntime
@_exported import PierService
