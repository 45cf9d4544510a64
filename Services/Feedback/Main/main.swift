import FeedbackService
import Glibc
import PierService

exit(await ServiceRunner.main(FeedbackService.self, version: PierVersion.current))
