"""jaxgjk.robot: a URDF's links as convex shapes, forward kinematics, and self- and world-collision
distances with gradients through the joint values (optional extra: ``pip install "jaxgjk[robot]"``).

Reading URDF files needs yourdfpy and trimesh; `import jaxgjk` needs neither.
"""

from ._geometry import GeometryGroup as GeometryGroup
from ._kinematics import Kinematics as Kinematics
from ._robot import Robot as Robot
from ._robot import RobotDistances as RobotDistances
from ._robot import always_in_contact as always_in_contact
from ._robot import collision_penalty as collision_penalty
from ._robot import collision_residual as collision_residual
from ._urdf import NonConvexMeshWarning as NonConvexMeshWarning
