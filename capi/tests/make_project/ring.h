/* Passing a value around the ring of PEs. */
#ifndef RING_H
#define RING_H

/* Every PE adds its number to a token that goes once round the ring from PE 0;
 * returns the token PE 0 got back (0 + 1 + ... + n-1 when all went well). */
long ring_sum(void);

#endif
