package ginmedian

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gin-gonic/gin"
)

// debugMu serializes the swap of gin.DebugPrintRouteFunc between Mounts.
var debugMu sync.Mutex

// registerQuietly runs register. In gin's debug mode it collects the route
// lines gin would print and prints one summary instead (see Mount).
func registerQuietly(register func()) {
	if !gin.IsDebugging() {
		register()
		return
	}
	debugMu.Lock()
	defer debugMu.Unlock()
	routes, handler, n := collectRoutes(register)
	if len(routes) == 0 {
		return
	}
	if printRoute := gin.DebugPrintRouteFunc; printRoute != nil {
		for _, p := range routes {
			printRoute("ANY", p, handler, n)
		}
		return
	}
	const format = "median endpoint at %s, every method --> %s (%d handlers)\n"
	at := strings.Join(routes, " and ")
	if gin.DebugPrintFunc != nil {
		gin.DebugPrintFunc(format, at, handler, n)
		return
	}
	fmt.Fprintf(gin.DefaultWriter, "[GIN-debug] "+format, at, handler, n)
}

// collectRoutes runs register with gin.DebugPrintRouteFunc collecting the
// routes' absolute paths (each once, in order), and restores it after,
// even when gin panics on a route registered twice.
func collectRoutes(register func()) (routes []string, handler string, n int) {
	saved := gin.DebugPrintRouteFunc
	defer func() { gin.DebugPrintRouteFunc = saved }()
	gin.DebugPrintRouteFunc = func(_, absolutePath, handlerName string, handlers int) {
		if !slices.Contains(routes, absolutePath) {
			routes = append(routes, absolutePath)
		}
		handler, n = handlerName, handlers
	}
	register()
	return routes, handler, n
}
