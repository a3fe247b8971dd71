package redact_test

import (
	"fmt"

	"github.com/seedkeeper/seedkeeper/internal/redact"
)

func ExampleURL() {
	fmt.Println(redact.URL("https://admin:hunter2@seed.example/vm1/?X-Signature=abc"))
	// Output: https://REDACTED@seed.example/vm1/?REDACTED
}
