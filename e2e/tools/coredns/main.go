// CoreDNS for the real node's pods, with only the plugins it uses: names in
// cluster.local answered from the apiserver, and nothing that forwards a
// query anywhere (the machines' network rule: nothing leaves the machine).
// A wrapper main rather than CoreDNS's own, whose plugin list pulls in every
// cloud provider's SDK and would take far longer to build.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

func init() {
	// The order in which plugins handle a query, as in CoreDNS's own plugin.cfg.
	dnsserver.Directives = []string{"bind", "ready", "errors", "cache", "kubernetes"}
}

func main() { coremain.Run() }
