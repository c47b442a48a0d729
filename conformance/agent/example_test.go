package agent_test

import (
	"fmt"

	"github.com/median-go/median/conformance/agent"
)

// Of shows an answer as the agent reads it: the hints leave the text and
// become the widget's button and highlight.
func ExampleOf() {
	body := []byte(`{"result":{"orderId":"A-1001","status":"shipped","medianNavigateTo":"/orders/A-1001","medianHighlight":"#status"}}`)
	v := agent.Of(200, "application/json", body)
	fmt.Println(v.Told)
	fmt.Println(v.Text)
	fmt.Println(v.Button, v.Highlight)

	v = agent.Of(400, "application/json", []byte(`{"error":{"code":"invalid_input","message":"orderId: must match ^[A-Z]-\\d+$"}}`))
	fmt.Println(v.Told, v.Text)
	// Output:
	// result
	// {"orderId":"A-1001","status":"shipped"}
	// /orders/A-1001 #status
	// fix_input orderId: must match ^[A-Z]-\d+$
}
