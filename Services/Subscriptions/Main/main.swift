import Glibc
import PierService
import SubscriptionsService

exit(await Executable.standalone(SubscriptionsService.self).main())
