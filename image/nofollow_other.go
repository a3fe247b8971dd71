//go:build !unix

package image

// oNoFollow is 0 where the system has no O_NOFOLLOW; Apply checks with
// Lstat before it opens.
const oNoFollow = 0
