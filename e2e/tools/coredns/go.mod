// Wrapper module that pins CoreDNS for the real node (main.go: a slim build).
module stateward.io/e2e/tools/coredns

go 1.26.0

require github.com/coredns/coredns v1.15.0
