/* weftrun — placeholder until the launcher lands. */
#include <stdio.h>
int main(void) { fprintf(stderr, "weftrun: not built yet\n"); return 77; }
