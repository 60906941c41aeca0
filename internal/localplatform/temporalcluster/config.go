package temporalcluster

import (
	"fmt"
	"os"
	"strconv"

	"sigs.k8s.io/yaml"
)

const (
	loopback = "127.0.0.1"

	// historyShards is the number of history shards: more than one, as in production, so
	// workflows spread over shards that are owned, moved and reacquired one by one. The
	// number is fixed for the life of the database.
	historyShards = 4

	// clusterName names the one cluster in the cluster metadata.
	clusterName = "active"

	// postgresUser is the database superuser initdb makes, which Temporal connects as.
	postgresUser = "temporal"
	// The databases of Temporal's two stores.
	mainDatabase       = "temporal"
	visibilityDatabase = "temporal_visibility"
	// postgresPlugin is Temporal's SQL plugin for PostgreSQL 12 and later.
	postgresPlugin = "postgres12"
)

// services are the Temporal services the server process runs, in the order their ports are
// handed out.
var services = []string{"frontend", "history", "matching", "worker"}

// servicePorts are one Temporal service's gRPC port, its membership (gossip) port and, for
// the frontend only, the port of its HTTP API (0 elsewhere).
type servicePorts struct{ grpc, membership, http int }

// yamlMap is a mapping of the server's YAML configuration: the literal below reads like the
// file it writes. The key names are the server's (go.temporal.io/server/common/config),
// which ignores a key it does not know: the integration test loads the file with the
// server's own loader to catch a misspelt one.
type yamlMap = map[string]any

// writeServerConfig writes the Temporal server's configuration to path: both stores on the
// PostgreSQL at postgresPort, the services on ports, the frontend's gRPC and HTTP API over TLS
// with the certificates of p (asking clients for theirs when mutualTLS), and archival off. It sets no
// dynamic configuration, so the server runs on its defaults. With jwks (the URL of a JWKS),
// the frontend checks each call's JWT against its keys, with the default claim mapper and
// authorizer.
func writeServerConfig(path string, postgresPort int, ports map[string]servicePorts, p *pki, mutualTLS bool, jwks string) error {
	store := func(database string, maxConns int) yamlMap {
		return yamlMap{"sql": yamlMap{
			"pluginName":      postgresPlugin,
			"databaseName":    database,
			"connectAddr":     hostPort(postgresPort),
			"connectProtocol": "tcp",
			"user":            postgresUser,
			"maxConns":        maxConns,
			"maxIdleConns":    maxConns,
			"maxConnLifetime": "1h",
		}}
	}
	svcs := yamlMap{}
	for _, name := range services {
		rpc := yamlMap{
			"grpcPort":       ports[name].grpc,
			"membershipPort": ports[name].membership,
			"bindOnIP":       loopback,
		}
		if ports[name].http != 0 {
			rpc["httpPort"] = ports[name].http
		}
		svcs[name] = yamlMap{"rpc": rpc}
	}
	// The server's own clients of the frontend (its system workers: scheduler, batcher,
	// deletion of namespaces) find it through membership and dial it with these settings.
	frontendClient := yamlMap{"serverName": frontendServerName, "rootCaFiles": []string{p.caFile}}
	frontendServer := yamlMap{"certFile": p.serverCert, "keyFile": p.serverKey}
	if mutualTLS {
		frontendServer["requireClientAuth"] = true
		frontendServer["clientCaFiles"] = []string{p.caFile}
	}
	archivalOff := yamlMap{
		"history":    yamlMap{"state": "disabled"},
		"visibility": yamlMap{"state": "disabled"},
	}
	conf := yamlMap{
		"log": yamlMap{"stdout": true, "level": "info"},
		"persistence": yamlMap{
			"defaultStore":     "postgres-default",
			"visibilityStore":  "postgres-visibility",
			"numHistoryShards": historyShards,
			"datastores": yamlMap{
				"postgres-default":    store(mainDatabase, 20),
				"postgres-visibility": store(visibilityDatabase, 10),
			},
		},
		"global": yamlMap{
			"membership": yamlMap{"maxJoinDuration": "30s", "broadcastAddress": loopback},
			"tls": yamlMap{
				"frontend": yamlMap{"server": frontendServer, "client": frontendClient},
				"systemWorker": yamlMap{
					"certFile": p.clientCert,
					"keyFile":  p.clientKey,
					"client":   frontendClient,
				},
			},
		},
		"services": svcs,
		"clusterMetadata": yamlMap{
			"enableGlobalNamespace":    false,
			"failoverVersionIncrement": 10,
			"masterClusterName":        clusterName,
			"currentClusterName":       clusterName,
			"clusterInformation": yamlMap{clusterName: yamlMap{
				"enabled":                true,
				"initialFailoverVersion": 1,
				"rpcName":                "frontend",
				"rpcAddress":             hostPort(ports["frontend"].grpc),
				"httpAddress":            hostPort(ports["frontend"].http),
			}},
		},
		"archival":          archivalOff,
		"namespaceDefaults": yamlMap{"archival": archivalOff},
	}
	if jwks != "" {
		conf["global"].(yamlMap)["authorization"] = yamlMap{
			"jwtKeyProvider":       yamlMap{"keySourceURIs": []string{jwks}, "refreshInterval": "1m"},
			"permissionsClaimName": "permissions",
			"authorizer":           "default",
			"claimMapper":          "default",
		}
	}
	out, err := yaml.Marshal(conf)
	if err != nil {
		return fmt.Errorf("temporal server config: %w", err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return fmt.Errorf("write temporal server config: %w", err)
	}
	return nil
}

func hostPort(port int) string { return loopback + ":" + strconv.Itoa(port) }
