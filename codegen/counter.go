package codegen

import "fmt"

// CounterPush returns the statements that push v, a mutable variable,
// onto the binary counter st (an Array of partial sums, one a level) as
// the j-th value of a run (j an index expression): while j's low bits
// are ones, v combines with the level's subtree on its left,
// comb(st[lvl], v), and climbs; then it rests at its level. After the values 0 … n-1 of a run, st holds the subtrees of
// the reference's pairwise tree over them, one for each one bit of n
// (CounterFold). It declares lvl and ctr; v ends up in st.
func CounterPush(l Lang, v, j, comb string) []string {
	return []string{
		l.Decl(l.Index, "lvl", l.Uint(0), true),
		l.Decl(l.Index, "ctr", j, true),
		"while ((ctr & " + l.Uint(1) + ") == " + l.Uint(1) + ") {",
		"\t" + v + " = " + comb + "(st[lvl], " + v + ");",
		"\tlvl = lvl + " + l.Uint(1) + ";",
		"\tctr = ctr >> " + l.Uint(1) + ";",
		"}",
		"st[lvl] = " + v + ";",
	}
}

// CounterTree returns the statements that reduce leaves values of the
// type named t by the reference's pairwise tree into a new mutable acc:
// leaf is the expression of the leaf numbered r (an index), comb names
// the function that combines two subtrees: CounterPush for each leaf,
// then CounterFold. leaves is at least 1.
func CounterTree(l Lang, t string, leaves int, leaf, comb string) []string {
	p, _ := SumBlock(leaves, 1)
	lines := []string{
		l.Array(t, "st", Log2(p)+1),
		l.For(l.Index, "r", l.Uint(leaves)),
		"\t" + l.Decl(t, "v", leaf, true),
	}
	for _, s := range CounterPush(l, "v", "r", comb) {
		lines = append(lines, "\t"+s)
	}
	return append(append(lines, "}"), CounterFold(l, t, leaves, comb)...)
}

// CounterFold returns the statements that combine the subtrees a binary
// counter st holds after n values (CounterPush) into a new mutable acc
// of the type named t: from the smallest up, each on the left of what
// the smaller ones made, which is cpuref's pairwise tree over the n
// values for any n (the padding leaves of its power-of-two tree change
// nothing). n is at least 1.
func CounterFold(l Lang, t string, n int, comb string) []string {
	var lines []string
	acc := false
	for lv := 0; 1<<lv <= n; lv++ {
		if n>>lv&1 == 0 {
			continue
		}
		st := fmt.Sprintf("st[%d]", lv)
		if !acc {
			lines = append(lines, l.Decl(t, "acc", st, true))
			acc = true
			continue
		}
		lines = append(lines, "acc = "+comb+"("+st+", acc);")
	}
	return lines
}
