import Gateway
import Glibc

exit(await Gateway.executable.main())
