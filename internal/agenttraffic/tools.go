package agenttraffic

import (
	"fmt"
)

// payload is a tool's arguments or result before an instrumentation renders it.
type payload = map[string]any

// toolSpec describes one tool of the simulated agent's catalog.
type toolSpec struct {
	name string
	// sideEffect tools change the world: their attempts carry side_effect and an
	// idempotency key.
	sideEffect bool
	// http tools call an HTTP API, so their attempts have an HTTP client child.
	http bool
	// asset tools read a data asset named in retrystorm.read.asset.
	asset bool
	// okLatency is the ms range of a successful attempt; its lower bound stays above the
	// stale-cache absolute bound so only the stale_cache scenario looks like a cache hit.
	okLatency [2]int
	args      func(g *rng) payload
	result    func(g *rng, args payload) payload
	// url is the URL and host an HTTP tool's request goes to; nil means the tool's generic
	// endpoint, named after it.
	url func(args payload) (url, host string)
}

// apiURL is an endpoint of the simulated API whose path or query holds one argument.
func apiURL(format, arg string) func(payload) (string, string) {
	return func(args payload) (string, string) {
		v, _ := args[arg].(string)
		return "https://api.example.com/v1/" + fmt.Sprintf(format, v), "api.example.com"
	}
}

var assets = []string{"analytics.orders_daily", "finance.ledger_entries", "ops.shipments",
	"crm.accounts", "finance.fx_rates", "analytics.revenue_by_region"}

func accountNumber(g *rng) string {
	return "DE" + g.digits(2) + " " + g.digits(4) + " " + g.digits(4) + " " + g.digits(4) + " " + g.digits(4) + " " + g.digits(2)
}

func email(g *rng) string {
	return fmt.Sprintf("%s.%s%s@example.com", pick(g, []string{"ana", "li", "sam", "noor", "jo"}),
		pick(g, []string{"meyer", "chen", "okafor", "silva", "berg"}), g.digits(4))
}

func orderID(g *rng) string { return "ord_" + g.token(10) }

// catalog is the simulated agent's tool set.
var catalog = []*toolSpec{
	{name: "search_docs", okLatency: [2]int{80, 600},
		args: func(g *rng) payload {
			return payload{"query": g.sentence(6), "top_k": g.between(3, 8), "request_id": g.token(12)}
		},
		result: func(g *rng, args payload) payload {
			hits := make([]any, 0, 5)
			for i := range g.between(2, 5) {
				hits = append(hits, payload{"doc_id": "doc_" + g.token(8), "rank": i + 1,
					"title": g.sentence(4), "snippet": g.sentence(40)})
			}
			return payload{"hits": hits}
		}},
	{name: "get_order", http: true, okLatency: [2]int{60, 400},
		url:  apiURL("orders/%s", "order_id"),
		args: func(g *rng) payload { return payload{"order_id": orderID(g)} },
		result: func(g *rng, args payload) payload {
			return payload{"order_id": args["order_id"], "status": pick(g, []string{"paid", "shipped", "pending"}),
				"total_cents": g.between(500, 90000), "currency": "EUR", "customer_email": email(g),
				"items": []any{payload{"sku": "sku_" + g.token(6), "qty": g.between(1, 4)}}}
		}},
	{name: "lookup_customer", http: true, okLatency: [2]int{60, 500},
		url:  apiURL("customers/%s", "customer_id"),
		args: func(g *rng) payload { return payload{"customer_id": "cus_" + g.token(10)} },
		result: func(g *rng, args payload) payload {
			return payload{"customer_id": args["customer_id"], "name": g.sentence(2), "email": email(g),
				"account_number": accountNumber(g), "tier": pick(g, []string{"gold", "standard"})}
		}},
	{name: "charge_card", sideEffect: true, http: true, okLatency: [2]int{200, 1500},
		url: apiURL("charges?order_id=%s", "order_id"),
		args: func(g *rng) payload {
			return payload{"order_id": orderID(g), "amount_cents": g.between(500, 90000),
				"currency": "EUR", "account_number": accountNumber(g)}
		},
		result: func(g *rng, args payload) payload {
			return payload{"status": "captured", "order_id": args["order_id"], "amount_cents": args["amount_cents"]}
		}},
	{name: "transfer_funds", sideEffect: true, http: true, okLatency: [2]int{300, 2000},
		url: apiURL("transfers?reference=%s", "reference"),
		args: func(g *rng) payload {
			return payload{"source_account": accountNumber(g), "dest_account": accountNumber(g),
				"amount_cents": g.between(1000, 900000), "reference": "INV-" + g.digits(6)}
		},
		result: func(g *rng, args payload) payload {
			return payload{"status": "accepted", "reference": args["reference"]}
		}},
	{name: "send_email", sideEffect: true, http: true, okLatency: [2]int{100, 900},
		url: apiURL("customers/%s/messages", "to"),
		args: func(g *rng) payload {
			return payload{"to": email(g), "subject": g.sentence(5), "body": g.sentence(60)}
		},
		result: func(g *rng, _ payload) payload {
			return payload{"message_id": "msg_" + g.token(14), "queued": true}
		}},
	{name: "create_ticket", sideEffect: true, http: true, okLatency: [2]int{150, 800},
		args: func(g *rng) payload {
			return payload{"title": g.sentence(6), "priority": pick(g, []string{"p1", "p2", "p3"}),
				"description": g.sentence(30)}
		},
		result: func(g *rng, _ payload) payload {
			return payload{"ticket_id": "TCK-" + g.digits(6), "state": "open"}
		}},
	{name: "query_warehouse", asset: true, okLatency: [2]int{300, 4000},
		args: func(g *rng) payload {
			return payload{"table": pick(g, assets), "sql": "select region, sum(amount) from t where day = '" +
				fmt.Sprintf("2025-%02d-%02d", g.between(1, 12), g.between(1, 28)) + "' group by region", "limit": 100}
		},
		result: func(g *rng, _ payload) payload {
			rows := make([]any, 0, 12)
			for range g.between(4, 12) {
				rows = append(rows, payload{"region": pick(g, []string{"emea", "amer", "apac"}),
					"amount": g.between(1000, 9999999)})
			}
			return payload{"rows": rows, "row_count": len(rows), "query_id": "q_" + g.token(10)}
		}},
	{name: "check_freshness", asset: true, okLatency: [2]int{60, 300},
		args: func(g *rng) payload {
			return payload{"table": pick(g, assets), "max_lag_minutes": g.between(30, 240)}
		},
		result: func(g *rng, args payload) payload {
			return payload{"table": args["table"], "lag_minutes": g.between(1, 90),
				"snapshot_id": "snap_" + g.token(10)}
		}},
	{name: "fetch_url", http: true, okLatency: [2]int{100, 1200},
		url: func(args payload) (string, string) {
			u, _ := args["url"].(string)
			return u, "status.example.com"
		},
		args: func(g *rng) payload {
			return payload{"url": "https://status.example.com/api/v2/" + g.token(8)}
		},
		result: func(g *rng, _ payload) payload {
			return payload{"status": 200, "body_excerpt": g.sentence(80)}
		}},
}

// mcpTools are the tools a framework with MCP tools beside its own (mcpToolErrors) calls
// over MCP.
var mcpTools = map[string]bool{"search_docs": true, "query_warehouse": true, "create_ticket": true}

func toolByName(name string) *toolSpec {
	for _, t := range catalog {
		if t.name == name {
			return t
		}
	}
	return nil
}

// readTools are the tools whose retries are harmless: retry_after_success and stale_cache
// use them so no side effect muddies those scenarios.
func readTools() []*toolSpec {
	var out []*toolSpec
	for _, t := range catalog {
		if !t.sideEffect {
			out = append(out, t)
		}
	}
	return out
}

func sideEffectTools() []*toolSpec {
	var out []*toolSpec
	for _, t := range catalog {
		if t.sideEffect {
			out = append(out, t)
		}
	}
	return out
}

func assetTools() []*toolSpec {
	var out []*toolSpec
	for _, t := range catalog {
		if t.asset {
			out = append(out, t)
		}
	}
	return out
}

// failureText is what a failed attempt says; a timeout says "timeout" so every
// instrumentation's message marks it as one.
func failureText(g *rng, status AttemptStatus) string {
	if status == AttemptTimeout {
		return fmt.Sprintf("tool call timeout after %dms", pick(g, []int{5000, 10000, 30000}))
	}
	return pick(g, []string{"upstream returned 503 Service Unavailable", "connection reset by peer",
		"rate limited: 429 Too Many Requests", "validation failed: amount_cents must be an integer",
		"internal error: lock wait exceeded"})
}
