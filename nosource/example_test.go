package nosource_test

import (
	"fmt"
	"time"

	"github.com/seedkeeper/seedkeeper/nosource"
)

// Boot found no source; a cidata CD-ROM appeared afterwards. watch applies
// nothing from it, and status says why.
func ExampleLate() {
	boot := nosource.Boot{Ran: true, At: time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC), Outcome: "no-source"}
	msg, late := nosource.Late(boot, nosource.Found{Source: "nocloud", Transport: "iso9660:/dev/sr0"})
	fmt.Println(late)
	fmt.Println(msg)
	// Output:
	// true
	// a seed appeared after boot: boot found no metadata source at 2026-03-01T08:00:00Z, and nocloud via iso9660:/dev/sr0 is here now; it takes effect on the next boot, and nothing from it is applied before
}
