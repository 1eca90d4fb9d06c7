/** GPU memory for ucx4j (see the module description). */
package org.ucx4j.cuda;
