import Glibc
import PierService
import SubscriptionsService

exit(await ServiceRunner.main(SubscriptionsService.self, version: PierVersion.current))
