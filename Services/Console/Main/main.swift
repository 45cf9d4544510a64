import ConsoleService
import Glibc
import PierService

exit(await Executable.standalone(ConsoleService.self).main())
