import AuthService
import Glibc
import PierService

exit(await Executable.standalone(AuthService.self).main())
