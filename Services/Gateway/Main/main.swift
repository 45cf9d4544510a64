import Gateway
import Glibc

exit(await Gateway.main())
