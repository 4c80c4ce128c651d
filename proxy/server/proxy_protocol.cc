#include "server/proxy_protocol.h"
