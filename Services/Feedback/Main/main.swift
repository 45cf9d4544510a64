import FeedbackService
import Glibc
import PierService

exit(await Executable.standalone(FeedbackService.self).main())
