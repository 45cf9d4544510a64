import AuthService
import Glibc
import PierService

exit(await ServiceRunner.main(AuthService.self, version: PierVersion.current))
